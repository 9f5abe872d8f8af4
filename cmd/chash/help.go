package main

import (
	"context"
	"fmt"
	"strings"
)

func init() { register(newHelp) }

func newHelp() *Command {
	return &Command{
		Run:       runHelp,
		UsageLine: "help [command]",
		Short:     "show the manual of a command",
		Long: `Help shows the list of commands or, given a command's name, its usage,
its description and its flags.`,
	}
}

func runHelp(_ context.Context, cmd *Command, env *Env, args []string) int {
	switch len(args) {
	case 0:
		mainUsage(env.Stdout)
		return 0
	case 1:
	default:
		return cmd.UsageError(env.Stderr, "too many arguments")
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(env.Stderr, "chash help %s: unknown command. Run 'chash help'.\n", args[0])
		return 2
	}
	w := env.Stdout
	fmt.Fprintf(w, "usage: chash %s\n\n%s\n", c.UsageLine, strings.TrimSpace(c.Long))
	if hasFlags(c) {
		fmt.Fprintln(w, "\nFlags:")
		c.Flag.SetOutput(w)
		c.Flag.PrintDefaults()
	}
	return 0
}
