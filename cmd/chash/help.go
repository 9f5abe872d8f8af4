package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

func init() { register(newHelp) }

func newHelp() *Command {
	return &Command{
		Run:       runHelp,
		UsageLine: "help [command|topic]",
		Short:     "show the manual of a command or a topic",
		Long: `Help shows the list of commands and topics or, given a command's name, its
usage, its description and its flags, and given a topic's name, the topic.
"chash CMD --help" (or -h) prints the same as "chash help CMD".`,
		Complete: func(args []string) []string {
			if len(args) > 0 {
				return nil
			}
			var names []string
			for _, c := range all() {
				names = append(names, c.Name()+"\t"+c.Short)
			}
			return names
		},
	}
}

func runHelp(_ context.Context, cmd *Command, env *Env, args []string) int {
	switch len(args) {
	case 0:
		return reportOut(cmd, env, printOut(env.Stdout, mainUsage))
	case 1:
	default:
		return cmd.UsageError(env.Stderr, "too many arguments")
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(env.Stderr, "chash help %s: unknown command or topic. Run 'chash help'.\n", args[0])
		return 2
	}
	return reportOut(cmd, env, printOut(env.Stdout, func(w io.Writer) { printHelp(w, c) }))
}

// reportOut returns 0 if err, a write error of cmd's output, is nil, and
// otherwise reports it and returns 1.
func reportOut(cmd *Command, env *Env, err error) int {
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	return 0
}

// printHelp writes the manual of a command or topic: its usage, its
// description and its flags.
func printHelp(w io.Writer, c *Command) {
	if c.Runnable() {
		fmt.Fprintf(w, "usage: chash %s\n\n", c.UsageLine)
	}
	fmt.Fprintf(w, "%s\n", strings.TrimSpace(c.Long))
	if hasFlags(c) {
		fmt.Fprintln(w, "\nFlags:")
		c.Flag.SetOutput(w)
		c.Flag.PrintDefaults()
	}
}
