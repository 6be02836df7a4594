package benchrun

import (
	"bufio"
	"errors"
	"os/exec"
	"regexp"
	"time"
)

// Announced starts cmd and waits up to a minute for a line of its standard
// error that re matches, and returns re's first group (an address, say).
// When none comes, the error is "<what> did not announce its address".
func Announced(cmd *exec.Cmd, re *regexp.Regexp, what string) (string, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u, nil
	case <-time.After(time.Minute):
		return "", errors.New(what + " did not announce its address")
	}
}
