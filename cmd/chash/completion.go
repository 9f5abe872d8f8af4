package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

func init() { register(newCompletion) }

func newCompletion() *Command {
	return &Command{
		Run:       runCompletion,
		UsageLine: "completion bash|zsh|fish",
		Short:     "print a shell's completion script for chash",
		Long: `Completion prints the script with which bash, zsh or fish completes chash's
commands, help topics, flags and the values of flags: a --format's formats,
the pools of the --config file for --pool, file names where a file is
wanted. The script asks chash itself what fits, so it stays in step with the
installed command. Load it in the shell's start-up file:

	bash (~/.bashrc):                  source <(chash completion bash)
	zsh (~/.zshrc, after compinit):    source <(chash completion zsh)
	fish (~/.config/fish/config.fish): chash completion fish | source`,
		Complete: func([]string) []string { return []string{"bash", "zsh", "fish"} },
	}
}

func runCompletion(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) != 1 {
		return cmd.UsageError(env.Stderr, "want one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[args[0]]
	if !ok {
		return cmd.UsageError(env.Stderr, "unknown shell %q; want bash, zsh or fish", args[0])
	}
	_, err := fmt.Fprint(env.Stdout, script)
	return reportOut(cmd, env, err)
}

// The scripts call "chash __complete WORD..." with the words of the line up to
// the one being completed, which may be empty, and offer what it prints: one
// candidate per line, with a description after a tab where it has one, and the
// line ":files" where file names fit too, or ":files=PREFIX" where they fit
// after PREFIX, the part of the word before them ("--config=").
const (
	completeCommand = "__complete"
	completeFiles   = ":files"
)

var completionScripts = map[string]string{
	"bash": `# bash completion for chash; load it with: source <(chash completion bash)
# Bash splits COMP_WORDS at the characters of COMP_WORDBREAKS (= and : among
# them), so the words are taken from COMP_LINE instead, as the user sees them,
# and each candidate is offered without the part of the word before the last
# of those characters, which bash leaves in place.
_chash() {
	local line=${COMP_LINE:0:COMP_POINT} words cur pre c files= fpre=
	read -ra words <<<"$line"
	[[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
	cur=${words[${#words[@]}-1]}
	pre=$cur
	while [[ -n $pre && $COMP_WORDBREAKS != *"${pre: -1}"* ]]; do pre=${pre%?}; done
	COMPREPLY=()
	while IFS= read -r c; do
		case $c in
		"") ;;
		:files) files=1 ;;
		:files=*) files=1 fpre=${c#:files=} ;;
		*) c=${c%%$'\t'*}; COMPREPLY+=("${c#"$pre"}") ;;
		esac
	done < <(chash __complete "${words[@]:1}" 2>/dev/null)
	if [ -n "$files" ]; then
		compopt -o filenames 2>/dev/null
		while IFS= read -r c; do c=$fpre$c; COMPREPLY+=("${c#"$pre"}"); done < <(compgen -f -- "${cur#"$fpre"}")
	fi
}
complete -F _chash chash
`,
	"zsh": `#compdef chash
# zsh completion for chash; load it with: source <(chash completion zsh)
_chash() {
	local -a cands
	local line files
	for line in "${(@f)$(chash __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
		case $line in
		'') ;;
		:files) files=1 ;;
		:files=*) files=1; compset -P '*=' ;;
		*$'\t'*) cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}") ;;
		*) cands+=("${line//:/\\:}") ;;
		esac
	done
	(( ${#cands} )) && _describe -t values chash cands
	[[ -n $files ]] && _files
	return 0
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_chash "$@"
else
	compdef _chash chash
fi
`,
	"fish": `# fish completion for chash; load it with: chash completion fish | source
function __chash_complete
	set -l words (commandline -opc)[2..-1] (commandline -ct)
	for line in (chash __complete $words 2>/dev/null)
		if test "$line" = :files
			__fish_complete_path (commandline -ct)
		else if string match -q -- ':files=*' $line
			set -l prefix (string replace -- :files= '' $line)
			for f in (__fish_complete_path (string sub -s (math (string length -- $prefix) + 1) -- (commandline -ct)))
				echo $prefix$f
			end
		else if test -n "$line"
			echo $line
		end
	end
end
complete -c chash -f -a '(__chash_complete)'
`,
}

// complete prints the completions of the last of words, the word being typed,
// after the words before it on the line (without "chash"), as the completion
// scripts read them.
func complete(env *Env, words []string) int {
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	for _, c := range completions(words, cur) {
		if strings.HasPrefix(c, cur) || strings.HasPrefix(c, completeFiles) {
			fmt.Fprintln(env.Stdout, c)
		}
	}
	return 0
}

// completions returns the candidates for the word cur after words, before
// filtering by cur.
func completions(words []string, cur string) []string {
	if len(words) == 0 {
		var out []string
		for _, c := range all() {
			if c.Runnable() {
				out = append(out, c.Name()+"\t"+c.Short)
			}
		}
		if strings.HasPrefix(cur, "-") {
			out = append(out, "--help\tshow the list of commands", "--version\tprint chash's version")
		}
		return out
	}
	c := lookup(words[0])
	if c == nil || !c.Runnable() {
		return nil
	}
	c.Flag.Init(c.Name(), flag.ContinueOnError)
	line := splitLine(&c.Flag, words[1:])
	if line.pending != nil {
		return flagValues(c, line.pending, line, "", cur)
	}
	if !line.dashdash && strings.HasPrefix(cur, "-") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(cur, "-"), "-"), "="); ok {
			if f := c.Flag.Lookup(name); f != nil && !isBoolFlag(f) {
				prefix := cur[:strings.IndexByte(cur, '=')+1]
				return flagValues(c, f, line, prefix, cur[len(prefix):])
			}
			return nil
		}
		var out []string
		c.Flag.VisitAll(func(f *flag.Flag) {
			_, usage := flag.UnquoteUsage(f)
			out = append(out, "--"+f.Name+"\t"+usage)
		})
		return append(out, "--help\tshow the manual of "+c.Name())
	}
	if c.Complete == nil {
		return nil
	}
	return c.Complete(line.args)
}

// flagValues returns the candidates for the value of flag f, each after
// prefix ("--format=" when the value is typed in the same word): the choices
// the command's usage line gives ("--format text|json|csv"), the pools of the
// configuration for --pool and --new-pool, or file names where the usage names
// a file, the distributions for sweep's --scheme and compare's --algorithms,
// whose value is a list: typed, the value typed so far, keeps its items up to
// the last comma, which are not offered again.
func flagValues(c *Command, f *flag.Flag, line commandLine, prefix, typed string) []string {
	fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(c.UsageLine))
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "--"+f.Name && strings.Contains(fields[i+1], "|") {
			var out []string
			for _, v := range strings.Split(fields[i+1], "|") {
				out = append(out, prefix+v)
			}
			return out
		}
	}
	switch f.Name {
	case "scheme", "algorithms":
		var listed []string // a name may be given once
		if f.Name == "algorithms" {
			done := typed[:strings.LastIndexByte(typed, ',')+1]
			prefix += done
			listed = strings.Split(done, ",")
		}
		var out []string
		for _, e := range dist.All() {
			if (f.Name == "algorithms" || e.Sweep != nil) && !slices.Contains(listed, e.Name) {
				out = append(out, prefix+e.Name+"\t"+e.Summary)
			}
		}
		return out
	case "pool", "new-pool":
		// The --config file, then the arguments: diff's OLD for --pool,
		// its NEW for --new-pool.
		files := line.args
		if cfg := line.values["config"]; cfg != "" {
			files = append([]string{cfg}, files...)
		}
		var file string
		if n := slices.Index([]string{"pool", "new-pool"}, f.Name); n < len(files) {
			file = files[n]
		}
		var out []string
		if cf, err := config.Load(file); err == nil {
			for _, p := range cf.Pools {
				out = append(out, prefix+p.Name)
			}
		}
		return out
	}
	switch name, _ := flag.UnquoteUsage(f); name {
	case "FILE", "IMAGE", "DIR":
		if prefix == "" {
			return []string{completeFiles}
		}
		return []string{completeFiles + "=" + prefix}
	}
	return nil
}
