package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

const usage = `usage: release image|package [-out DIR] [-image REGISTRY/toolgate/toolgate]

  image    OCI image layouts under DIR/image/ (toolgate, toolgate-runner)
  package  archives, .deb, .rpm, server.json and checksums under DIR/`

func run(args []string) error {
	if len(args) == 0 || (args[0] != "image" && args[0] != "package") {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	out := fs.String("out", "dist", "where the artifacts go (relative to the repository's root)")
	image := fs.String("image", "toolgate/toolgate", "the image's name in server.json, where a release pushes it: REGISTRY/toolgate/toolgate")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	o, err := newOptions(*out)
	if err != nil {
		return err
	}
	o.Image = *image
	if args[0] == "image" {
		return buildImages(o)
	}
	return buildPackages(o)
}

// options say where a build reads and writes, and what it stamps.
type options struct {
	Repo  string // the repository's root
	Out   string // where dist goes
	Cache string // downloaded Debian packages and apt's state
	Stamp stamp
	// Image is the lean image's name server.json gives (without a tag).
	Image string
	// Bin, when set, keeps the programs make package builds, by platform,
	// and a build that finds them there uses them (tests build twice).
	Bin string
}

func newOptions(out string) (options, error) {
	repo, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return options{}, fmt.Errorf("run release inside toolgate's git checkout: %w", err)
	}
	s, err := readStamp(repo)
	if err != nil {
		return options{}, err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(repo, out)
	}
	return options{Repo: repo, Out: out, Cache: filepath.Join(repo, ".cache", "image"), Stamp: s}, nil
}

// A stamp is what a build says about its source.
type stamp struct {
	Version string    // 1.2.0 at tag v1.2.0, else 0.0.0-YYYYMMDDhhmmss-abcdef123456 (as Go's pseudo-versions)
	Commit  string    // the full commit hash, "+dirty" after it when the tree has changes
	Time    time.Time // every file's time: SOURCE_DATE_EPOCH, else the commit's time
}

func readStamp(repo string) (stamp, error) {
	commit, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		return stamp{}, err
	}
	ct, err := git(repo, "log", "-1", "--format=%ct")
	if err != nil {
		return stamp{}, err
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return stamp{}, fmt.Errorf("the commit's time %q: %w", ct, err)
	}
	s := stamp{Commit: commit, Time: time.Unix(sec, 0).UTC()}
	s.Version = "0.0.0-" + s.Time.Format("20060102150405") + "-" + commit[:12]
	if tag, err := git(repo, "describe", "--tags", "--exact-match", "--match", "v[0-9]*"); err == nil {
		s.Version = strings.TrimPrefix(tag, "v")
	}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" {
		sec, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			return stamp{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", env)
		}
		s.Time = time.Unix(sec, 0).UTC()
	}
	if changes, err := git(repo, "status", "--porcelain"); err != nil {
		return stamp{}, err
	} else if changes != "" {
		s.Commit += "+dirty"
	}
	return s, nil
}

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	return command(dir, nil, "git", args...)
}

// command runs name in dir with env added to this process's, and returns
// its output, trimmed; an error carries its stderr.
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
