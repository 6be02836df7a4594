package policy

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// State is the state section of a policy file: where what several
// replicas of toolgate must agree on is kept. Without it each process
// keeps its own (memory, and bbolt for idempotency).
type State struct {
	// Redis shares rate limits, the loop guard, the denial breaker and
	// idempotency results between replicas.
	Redis *RedisState `yaml:"redis,omitempty" json:"redis,omitempty"`
}

// RedisState is the state.redis block.
type RedisState struct {
	// URL is redis://[user@]host:port/db or rediss:// (TLS). It may not
	// carry a password: name an environment variable in PasswordEnv.
	URL string `yaml:"url" json:"url"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env,omitempty" json:"password_env,omitempty"`
	// Prefix starts every key, so that one Redis serves several
	// deployments ("" : DefaultRedisPrefix).
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// OnError is what a call gets while Redis cannot be reached.
	OnError OnError `yaml:"on_error,omitempty" json:"on_error,omitempty"`
}

// DefaultRedisPrefix starts the keys when the policy names no prefix.
const DefaultRedisPrefix = "toolgate:"

// OnError is what a call gets while the shared store cannot be reached.
type OnError string

const (
	// OnErrorDeny (the default) refuses the call as unavailable, with a
	// retry hint: no call runs unguarded.
	OnErrorDeny OnError = "deny"
	// OnErrorAllow runs the call under this process's own limits.
	OnErrorAllow OnError = "allow"
)

// envName is compiled on first use: most processes never check a variable name.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// check validates the block without reading the environment (a policy is
// checked where the password may not be set).
func (r *RedisState) check() (field, msg string) {
	u, err := url.Parse(r.URL)
	switch {
	case r.URL == "":
		return "url", "state.redis.url is required (redis://host:6379/0 or rediss://…)"
	case err != nil:
		return "url", fmt.Sprintf("state.redis.url: %v", err)
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return "url", fmt.Sprintf("state.redis.url: scheme %q, want redis or rediss", u.Scheme)
	case u.Host == "":
		return "url", "state.redis.url names no host"
	}
	if _, set := u.User.Password(); set {
		return "url", "state.redis.url carries a password: put it in an environment variable and name it in state.redis.password_env"
	}
	// The database: none, or one number (the client's other options, in
	// the query, are checked when it is made: the store package).
	if db := strings.Trim(u.Path, "/"); db != "" {
		if _, err := strconv.Atoi(db); err != nil {
			return "url", fmt.Sprintf("state.redis.url: the path %q is not a database number", u.Path)
		}
	}
	if r.PasswordEnv != "" && !envName().MatchString(r.PasswordEnv) {
		return "password_env", fmt.Sprintf("state.redis.password_env %q is not an environment variable name", r.PasswordEnv)
	}
	switch r.OnError {
	case "", OnErrorDeny, OnErrorAllow:
	default:
		return "on_error", fmt.Sprintf("state.redis.on_error %q: want deny or allow", r.OnError)
	}
	return "", ""
}

// Check validates the block without reading the environment: the store
// package checks it again before it makes a client of it.
func (r *RedisState) Check() error {
	if field, msg := r.check(); field != "" {
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// KeyPrefix is the prefix of every key (Prefix or DefaultRedisPrefix).
func (r *RedisState) KeyPrefix() string {
	if r.Prefix == "" {
		return DefaultRedisPrefix
	}
	return r.Prefix
}

// Mode is the on_error mode in force (OnErrorDeny unless allow).
func (r *RedisState) Mode() OnError {
	if r.OnError == OnErrorAllow {
		return OnErrorAllow
	}
	return OnErrorDeny
}
