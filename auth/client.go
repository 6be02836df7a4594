package auth

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// readSecret reads a client secret from a file (its content, without the
// final newline) or an environment variable: one of the two.
func readSecret(file, env string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", errors.New("give client_secret_file or client_secret_env, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("client_secret_file: %w", err)
		}
		s := strings.TrimRight(string(b), "\r\n")
		if s == "" {
			return "", fmt.Errorf("client_secret_file %s is empty", file)
		}
		return s, nil
	}
	s, ok := os.LookupEnv(env)
	if !ok || s == "" {
		return "", fmt.Errorf("client_secret_env: the variable %s is not set", env)
	}
	return s, nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
