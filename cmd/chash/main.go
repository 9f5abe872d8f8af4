package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Command is a chash subcommand, in the style of cmd/go's base.Command. Each
// lives in its own file, which registers the function that makes it from an init
// function; add a section for it to the manual in doc.go too.
type Command struct {
	// Run runs the command with the arguments that are not flags, in order. It
	// returns the exit status: 0 for success, 2 for a usage error or a bad
	// configuration, 1 for any other failure. ctx is never canceled by chash
	// itself: a command that runs until it is stopped handles signals with
	// signal.NotifyContext. A Command without Run is a help topic, which "chash
	// help NAME" prints.
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
	// Complete, if not nil, returns the shell completions of the command's
	// next argument that is not a flag, given those before it: words, or
	// completeFiles for file names. If nil, such arguments complete to
	// nothing. Flags and their values complete without it (completion.go).
	Complete func(args []string) []string
	// Getopt, if not nil, rewrites the command's arguments before its flags
	// are parsed: proxy reads nutcracker's getopt forms ("-v6", "-dt"),
	// which the flag package does not.
	Getopt func(fs *flag.FlagSet, args []string) []string
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

// Errorf prints "chash NAME: " and the message to w. An error among args
// prints as message words it: the line names the command, and "chash proxy:
// proxy: sf.yml:3: ..." says where it comes from twice.
func (c *Command) Errorf(w io.Writer, format string, args ...any) {
	args = slices.Clone(args)
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = message(err)
		}
	}
	fmt.Fprintf(w, "chash %s: %s\n", c.Name(), fmt.Sprintf(format, args...))
}

// internalPackages are the packages whose names prefix the errors they make
// or wrap, as the house's errors do ("config: ", "membership: "). Their names
// are words about chash's code, not about what an operator runs, so a
// command's line leaves them out.
var internalPackages = []string{"analyze", "config", "dist", "membership", "plot", "proxy"}

// message returns err's message without the internal packages' names among
// its parts ("proxy: f.yml:3: pool \"a\": membership: file:x: open x: ..."
// is "f.yml:3: pool \"a\": file:x: open x: ..."). A part is what lies
// between two ": ", so a name quoted in a message, or part of a longer
// part, stays.
func message(err error) string {
	parts := strings.Split(err.Error(), ": ")
	kept := slices.DeleteFunc(parts, func(p string) bool { return slices.Contains(internalPackages, p) })
	if len(kept) == 0 {
		return err.Error()
	}
	return strings.Join(kept, ": ")
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

// all returns a new instance of every command, sorted by name, help topics
// included.
func all() []*Command {
	cmds := make([]*Command, len(commands))
	for i, newCommand := range commands {
		cmds[i] = newCommand()
	}
	slices.SortFunc(cmds, func(a, b *Command) int { return strings.Compare(a.Name(), b.Name()) })
	return cmds
}

// Runnable reports whether c is a command rather than a help topic.
func (c *Command) Runnable() bool { return c.Run != nil }

// argv is the program's command line as main got it: what --daemonize runs
// again in the daemon's process.
var argv []string

func main() {
	argv = os.Args
	os.Exit(run(aliasArgs(os.Args[0], os.Args[1:]), os.Stdin, os.Stdout, os.Stderr))
}

// nutcrackerConf is the configuration nutcracker reads without -c, as Debian
// builds it.
const nutcrackerConf = "/etc/nutcracker/nutcracker.yml"

// aliasArgs returns the chash command line of a program named argv0 run with
// args. Installed as (or linked to) nutcracker, chash is chash proxy of
// nutcracker's configuration file unless args name another, so that init
// scripts and unit files written for nutcracker run it unchanged; it never
// serves the embedded default there, where nutcracker would read its file.
func aliasArgs(argv0 string, args []string) []string {
	if filepath.Base(argv0) != "nutcracker" {
		return args
	}
	// A later -c or --conf-file overrides this one.
	return append([]string{"proxy", "--config", nutcrackerConf}, args...)
}

// run runs the chash command line args (without the program name) and returns
// the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		mainUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		if err := printOut(stdout, mainUsage); err != nil {
			fmt.Fprintf(stderr, "chash: %v\n", err)
			return 1
		}
		return 0
	case "-version", "--version":
		name = "version"
	case completeCommand:
		return complete(env, args[1:])
	}
	c := lookup(name)
	if c == nil || !c.Runnable() {
		fmt.Fprintf(stderr, "chash: unknown command %q\nRun 'chash help' for usage.\n", name)
		return 2
	}
	c.Flag.Init(c.Name(), flag.ContinueOnError)
	c.Flag.SetOutput(io.Discard) // errors are printed below, help on stdout
	c.Flag.Usage = func() {}
	args = args[1:]
	if c.Getopt != nil {
		args = c.Getopt(&c.Flag, args)
	}
	pos, err := parseFlags(&c.Flag, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return reportOut(c, env, printOut(stdout, func(w io.Writer) { printHelp(w, c) }))
	case err != nil:
		return c.UsageError(stderr, "%v", err)
	}
	return c.Run(context.Background(), c, env, pos)
}

// parseFlags parses the flags of fs found anywhere in args, as most commands
// of a shell do ("chash route KEY --config FILE"), and returns the other
// arguments in order. "--" ends the flags: every argument after it is not a
// flag, nor is "-" (standard input). So a key that starts with '-' follows
// "--", where it cannot be mistaken for a flag nor silently routed as a key.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	line := splitLine(fs, args)
	if err := fs.Parse(line.flags); err != nil {
		return nil, asTyped(err, line.flags)
	}
	return line.args, nil
}

// asTyped returns the flag package's error with the flag it names written
// as the user typed it: the package writes "-config" for "--config" too.
func asTyped(err error, flags []string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	for _, a := range flags {
		name, ok := strings.CutPrefix(a, "--")
		if !ok || name == "" {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		// "...: -name" (not defined, needs an argument), or "invalid value
		// ... for flag -name: ..." and "invalid boolean value ... for -name: ...".
		if rest, ok := strings.CutSuffix(msg, ": -"+name); ok {
			return errors.New(rest + ": --" + name)
		}
		for _, p := range []string{" for flag -", " for -"} {
			if before, after, ok := strings.Cut(msg, p+name+": "); ok {
				return errors.New(before + p + "-" + name + ": " + after)
			}
		}
	}
	return err
}

// A commandLine is a command's arguments told apart into flags and the rest,
// as parseFlags parses them and completion reads them.
type commandLine struct {
	flags    []string          // the flags with their values, in order, for FlagSet.Parse
	values   map[string]string // the value of each flag given, by name (the last one)
	args     []string          // the arguments that are not flags, in order
	pending  *flag.Flag        // the last argument's flag, whose value has not come
	dashdash bool              // "--" has ended the flags
}

// splitLine tells the flags of fs among args from the other arguments. A flag
// that takes a value takes the next argument, whatever it looks like, as the
// flag package does; a flag fs does not know is kept for Parse to report.
func splitLine(fs *flag.FlagSet, args []string) commandLine {
	line := commandLine{values: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case line.dashdash || len(a) < 2 || a[0] != '-':
			line.args = append(line.args, a)
			continue
		case a == "--":
			line.dashdash = true
			continue
		}
		line.flags = append(line.flags, a)
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil || hasValue || isBoolFlag(f):
		case i+1 == len(args):
			line.pending = f
		default:
			i++
			value = args[i]
			line.flags = append(line.flags, value)
		}
		line.values[name] = value
	}
	return line
}

// isBoolFlag reports whether f takes no value, as the flag package decides.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
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
		if c.Runnable() {
			fmt.Fprintf(w, "\t%-10s %s\n", c.Name(), c.Short)
		}
	}
	fmt.Fprint(w, "\nUse \"chash help <command>\" for more information about a command.\n"+
		"Flags may come before or after a command's arguments; \"--\" ends them.\n")
	topics := slices.DeleteFunc(all(), (*Command).Runnable)
	if len(topics) == 0 {
		return
	}
	fmt.Fprint(w, "\nAdditional help topics:\n\n")
	for _, c := range topics {
		fmt.Fprintf(w, "\t%-10s %s\n", c.Name(), c.Short)
	}
	fmt.Fprint(w, "\nUse \"chash help <topic>\" for more information about that topic.\n")
}
