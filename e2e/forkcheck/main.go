// Command forkcheck checks that the demo is one removable piece: it copies
// the repository (every tracked and untracked file git does not ignore) to
// a scratch directory, makes there the change the README's "Make it
// yours" asks of a fork — functions/mcp's newEndpoint serves a foreign
// tool (testdata/forecast.go) instead of the note book — regenerates the
// generated files (make regen), then runs the whole suite (make test) in
// the copy. It fails unless the copy no longer names the note book in
// functions/mcp and every test passes.
//
//	go run ./forkcheck -root ..        (make fork-check)
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	root := flag.String("root", "..", "the repository to copy")
	keep := flag.Bool("keep", false, "keep the copy afterwards (its path is printed)")
	target := flag.String("target", "fork-suite", "the make target run in the copy after make regen")
	flag.Parse()
	if err := run(*root, *target, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "forkcheck:", err)
		os.Exit(1)
	}
}

// The one line of functions/mcp/main.go that names the demo, and what a
// fork puts there.
const (
	demoCall    = "return notebook.New(cfg, o, version)"
	foreignCall = "return newForecast(cfg, o)"
	demoImport  = "\t\"github.com/serverless-mcp/mcp-lambda/notebook\"\n"
)

func run(root, target string, keep bool) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "forkcheck-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("forkcheck: the copy is", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	n, err := copyTree(root, dir)
	if err != nil {
		return fmt.Errorf("copying the repository: %w", err)
	}
	// A repository of its own, so that the copy's build stamps and the
	// suite's git checks (the tree stays clean) see a checkout: the copy
	// as it came, then the fork's change.
	commit := func(msg string) error {
		return command(dir, "git", "-c", "user.name=forkcheck", "-c", "user.email=forkcheck@localhost", "commit", "-qam", msg, "--allow-empty")
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		if err := command(dir, "git", args...); err != nil {
			return err
		}
	}
	if err := commit("copy"); err != nil {
		return err
	}
	if err := fork(dir); err != nil {
		return err
	}
	if err := command(dir, "git", "add", "-A"); err != nil {
		return err
	}
	if err := commit("fork"); err != nil {
		return err
	}
	fmt.Printf("forkcheck: %d files copied to %s; functions/mcp now serves a foreign tool\n", n, dir)
	start := time.Now()
	if err := command(dir, "make", "regen"); err != nil {
		return err
	}
	// The regenerated tools/list names the fork's tool, not the demo's.
	if b, err := os.ReadFile(filepath.Join(dir, "events", "tools-list.expected.json")); err != nil || !bytes.Contains(b, []byte(`"forecast"`)) || bytes.Contains(b, []byte(`"notes_`)) {
		return fmt.Errorf("make regen did not rewrite events/tools-list.expected.json for the fork's tools (%v)", err)
	}
	if err := commit("regenerated"); err != nil {
		return err
	}
	// What the fork changed, against the repository as it was copied:
	// functions/mcp and the function's events only. (make fork-suite
	// leaves out the targets whose inputs are all elsewhere.)
	out, err := exec.Command("git", "-C", dir, "diff", "--name-only", "HEAD~2", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("listing the fork's change: %w", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "functions/mcp/") && !strings.HasPrefix(f, "events/") {
			return fmt.Errorf("the fork changed %s, outside functions/mcp and events/: make fork-suite would leave a target it affects out", f)
		}
	}
	if err := command(dir, "make", target); err != nil {
		return fmt.Errorf("the fork's make %s: %w", target, err)
	}
	if out, err := exec.Command("git", "-C", dir, "status", "--porcelain").Output(); err != nil || len(out) > 0 {
		return fmt.Errorf("make %s left the fork's tree changed (%v):\n%s", target, err, out)
	}
	fmt.Printf("forkcheck: ok: the demo replaced by a foreign tool, make regen and make %s passed in %s\n", target, time.Since(start).Round(time.Second))
	return nil
}

// fork makes the change a fork makes: the foreign tool's file beside
// main.go, and newEndpoint calling it instead of the note book.
func fork(dir string) error {
	mainGo := filepath.Join(dir, "functions", "mcp", "main.go")
	b, err := os.ReadFile(mainGo)
	if err != nil {
		return err
	}
	if bytes.Count(b, []byte(demoCall)) != 1 || bytes.Count(b, []byte(demoImport)) != 1 {
		return fmt.Errorf("functions/mcp/main.go no longer has the one line a fork changes (%q): update forkcheck with the README", demoCall)
	}
	b = bytes.Replace(b, []byte(demoCall), []byte(foreignCall), 1)
	b = bytes.Replace(b, []byte(demoImport), nil, 1)
	if err := os.WriteFile(mainGo, b, 0o644); err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join("forkcheck", "testdata", "forecast.go"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "functions", "mcp", "forecast.go"), src, 0o644); err != nil {
		return err
	}
	// Nothing in the function's code uses the note book any more (its
	// comments may still say where the demo went).
	out, _ := exec.Command("grep", "-rlE", `mcp-lambda/notebook"|notebook\.[A-Z]|"notes_`, filepath.Join(dir, "functions", "mcp")).Output()
	if s := strings.TrimSpace(string(out)); s != "" {
		return fmt.Errorf("functions/mcp still names the note book after the change:\n%s", s)
	}
	return nil
}

// copyTree copies every file git lists in root (tracked, and untracked
// but not ignored) to dir, keeping modes and modification times (so that
// make sees nothing newer than what it made).
func copyTree(root, dir string) (int, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from, to := filepath.Join(root, name), filepath.Join(dir, name)
		fi, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet staged
		}
		if err != nil {
			return n, err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return n, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return n, err
			}
			if err := os.Symlink(target, to); err != nil {
				return n, err
			}
			n++
			continue
		}
		if err := copyFile(from, to, fi); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func copyFile(from, to string, fi os.FileInfo) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, fi.ModTime(), fi.ModTime())
}

// command runs name in dir with this process's output.
func command(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
