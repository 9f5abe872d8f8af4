package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// A Command is a chash subcommand, in the style of cmd/go's base.Command. Each
// lives in its own file, which registers the function that makes it from an init
// function; add a section for it to the manual in doc.go too.
type Command struct {
	// Run runs the command with the arguments left after the flags. It returns
	// the exit status: 0 for success, 2 for a usage error or a bad configuration,
	// 1 for any other failure. ctx is never canceled by chash itself: a command
	// that runs until it is stopped handles signals with signal.NotifyContext.
	Run func(ctx context.Context, cmd *Command, env *Env, args []string) int
	// UsageLine is the one-line usage message. Its first word is the command's
	// name.
	UsageLine string
	// Short is the one-line description that "chash help" shows.
	Short string
	// Long is the description that "chash help NAME" shows.
	Long string
	// Flag is the set of flags of the command.
	Flag flag.FlagSet
}

// Env is where a command reads and writes.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Name returns the command's name, the first word of its UsageLine.
func (c *Command) Name() string {
	name, _, _ := strings.Cut(c.UsageLine, " ")
	return name
}

// Errorf prints "chash NAME: " and the message to w.
func (c *Command) Errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "chash %s: %s\n", c.Name(), fmt.Sprintf(format, args...))
}

// UsageError prints the message and the command's usage to w and returns 2, the
// exit status of a usage error.
func (c *Command) UsageError(w io.Writer, format string, args ...any) int {
	c.Errorf(w, format, args...)
	c.usage(w)
	return 2
}

func (c *Command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: chash %s\nRun 'chash help %s' for details.\n", c.UsageLine, c.Name())
}

// commands holds a constructor for each command. Each run builds its command
// afresh, so flag values never leak from one run to the next.
var commands []func() *Command

// register adds a command; its file calls it from an init function.
func register(newCommand func() *Command) {
	commands = append(commands, newCommand)
}

// lookup returns a new instance of the named command, or nil.
func lookup(name string) *Command {
	for _, newCommand := range commands {
		if c := newCommand(); c.Name() == name {
			return c
		}
	}
	return nil
}

// all returns a new instance of every command, sorted by name.
func all() []*Command {
	cmds := make([]*Command, len(commands))
	for i, newCommand := range commands {
		cmds[i] = newCommand()
	}
	slices.SortFunc(cmds, func(a, b *Command) int { return strings.Compare(a.Name(), b.Name()) })
	return cmds
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the chash command line args (without the program name) and returns
// the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		mainUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		mainUsage(stdout)
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "chash: unknown command %q\nRun 'chash help' for usage.\n", args[0])
		return 2
	}
	c.Flag.Init(c.Name(), flag.ContinueOnError)
	c.Flag.SetOutput(stderr)
	c.Flag.Usage = func() {
		c.usage(stderr)
		if hasFlags(c) {
			fmt.Fprintln(stderr, "\nFlags:")
			c.Flag.PrintDefaults()
		}
	}
	if err := c.Flag.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // the flag package has printed the error and the usage
	}
	return c.Run(context.Background(), c, env, c.Flag.Args())
}

func hasFlags(c *Command) bool {
	n := 0
	c.Flag.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func mainUsage(w io.Writer) {
	fmt.Fprint(w, "Chash routes keys to servers with consistent hashing, as a twemproxy\n"+
		"configuration file describes them, and measures how rings spread and move keys.\n\n"+
		"Usage:\n\n\tchash <command> [arguments]\n\nThe commands are:\n\n")
	for _, c := range all() {
		fmt.Fprintf(w, "\t%-10s %s\n", c.Name(), c.Short)
	}
	fmt.Fprint(w, "\nUse \"chash help <command>\" for more information about a command.\n")
}
