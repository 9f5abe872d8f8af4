package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/plot"
)

// writeTable writes rows under head (if not nil) in columns two spaces apart,
// each line starting with indent; align has an 'l' (left) or 'r' (right) for
// each column.
func writeTable(w io.Writer, indent string, head []string, rows [][]string, align string) {
	if head != nil {
		rows = append([][]string{head}, rows...)
	}
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(align) && align[i] == 'l' {
				b.WriteString(c)
				b.WriteString(pad)
			} else {
				b.WriteString(pad)
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// pct formats a fraction as a percentage with two decimals.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }

// fmtFloat formats a float for CSV: the shortest form that reads back exactly.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// movementColumns are the CSV columns of what moves when a node is added and
// when one is removed: add_ and remove_ followed by analyze.Movement's fields.
var movementColumns = []string{"add_moved", "add_ideal", "add_modulo_moved", "remove_moved", "remove_ideal", "remove_modulo_moved"}

// movementCells returns the CSV cells of m's three fields, empty if m is nil.
func movementCells(m *analyze.Movement) []string {
	if m == nil {
		return []string{"", "", ""}
	}
	return []string{fmtFloat(m.Moved), fmtFloat(m.Ideal), fmtFloat(m.ModuloMoved)}
}

// f3 formats a float with three decimals.
func f3(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkOutput checks the --format and plot flags shared by the analysis commands.
func checkOutput(cmd *Command, env *Env, format string, plots ...string) int {
	switch format {
	case "text", "json", "csv":
	default:
		return cmd.UsageError(env.Stderr, "--format %q: want text, json or csv", format)
	}
	for _, p := range plots {
		if p == "" {
			continue
		}
		if _, err := plot.Format(p); err != nil {
			return cmd.UsageError(env.Stderr, "%v", err)
		}
		// Refused before the work, not after it is printed.
		if dir := filepath.Dir(p); !isDir(dir) {
			return cmd.UsageError(env.Stderr, "%s: no directory %s to write it in", p, dir)
		}
	}
	return 0
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// savePlot builds a chart and saves it.
func savePlot(path string, build func() (*plot.Chart, error)) error {
	c, err := build()
	if err != nil {
		return err
	}
	return c.Save(path)
}

// flagSet reports whether the flag called name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// printOut writes with print to w through a buffer and returns the first write
// error, so that help and version, like the commands that print figures, can
// exit 1 when their output cannot be written (a full disk, a closed pipe).
func printOut(w io.Writer, print func(io.Writer)) error {
	bw := bufio.NewWriter(w)
	print(bw)
	return bw.Flush()
}

// serversText is "1 server" or "N servers".
func serversText(n int) string {
	if n == 1 {
		return "1 server"
	}
	return strconv.Itoa(n) + " servers"
}
