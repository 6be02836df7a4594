package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolgate/toolgate/policy"
)

// RedisProcesses is a policy.ProcessBoard in a Redis the replicas share.
// An entry is a hash (its fields and the tail of its output) that expires
// keep after its last Put; an owner's entries are a set of ids; a
// replica's lease is a key that expires unless the replica renews it.
// Every key is a digest under the prefix. A process's name, command line
// and output, which may hold secrets, are sealed together (AES-256-GCM,
// bound to the process); without a Sealer they are not written at all.
type RedisProcesses struct {
	c      redis.UniversalClient
	prefix string
	seal   Sealer
}

// Sealer seals and opens values bound to ad (what they are and whose):
// auth.Sealer, keyed by the secret every replica shares, is one.
type Sealer interface {
	SealBytes(ad string, plain []byte) ([]byte, error)
	OpenBytes(ad string, sealed []byte) ([]byte, error)
}

// NewRedisProcesses returns the board over the client c (which it does not
// close), its keys under prefix, the names, command lines and output
// sealed with seal (nil: they are not kept, and a reader gets them
// Withheld).
func NewRedisProcesses(c redis.UniversalClient, prefix string, seal Sealer) *RedisProcesses {
	return &RedisProcesses{c: c, prefix: prefix + "proc:", seal: seal}
}

// What Withheld says when Name, Command and Tail could not be read.
const (
	withheldUnsealed = "the replica that runs it has no sealing key, so its name, command and output are not shared"
	withheldKey      = "its name, command and output are sealed with a key this replica does not hold"
)

// sealAD binds what is sealed to its process and to the fields a reader
// trusts beside it: who owns it (read_process checks that) and where it
// runs. A value moved to another process, or an owner rewritten in Redis,
// does not open.
func sealAD(e policy.ProcessEntry) string {
	return "toolgate-process\x00" + e.ID + "\x00" + e.Owner + "\x00" + e.Replica
}

// sealed is the name, command and tail of e, each after its length, sealed.
func (s *RedisProcesses) sealed(e policy.ProcessEntry) ([]byte, error) {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+len(e.Name)+len(e.Command)+len(e.Tail))
	for _, f := range [][]byte{[]byte(e.Name), []byte(e.Command), e.Tail} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	out, err := s.seal.SealBytes(sealAD(e), b)
	if err != nil {
		return nil, fmt.Errorf("store: sealing a process: %w", err)
	}
	return out, nil
}

// open fills in e's name, command and tail from what sealed made of them.
func (s *RedisProcesses) open(e *policy.ProcessEntry, sealed string) bool {
	b, err := s.seal.OpenBytes(sealAD(*e), []byte(sealed))
	if err != nil {
		return false
	}
	var f [3][]byte
	for i := range f {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return false
		}
		f[i], b = b[k:k+int(n)], b[k+int(n):]
	}
	e.Name, e.Command, e.Tail = string(f[0]), string(f[1]), f[2]
	return true
}

func (s *RedisProcesses) key(kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	return s.prefix + kind + hex.EncodeToString(sum[:16])
}

func (s *RedisProcesses) entry(id string) string      { return s.key("", id) }
func (s *RedisProcesses) owner(owner string) string   { return s.key("owner:", owner) }
func (s *RedisProcesses) lease(replica string) string { return s.key("lease:", replica) }

// Renew implements policy.ProcessBoard.
func (s *RedisProcesses) Renew(ctx context.Context, replica string, ttl time.Duration) error {
	if err := s.c.Set(ctx, s.lease(replica), replica, ttl).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// procPutScript writes the entry KEYS[1] (ARGV[3…]: field, value…) unless a
// reader marked it lost, keeps it ARGV[1] ms, and adds its id ARGV[2] to
// its owner's set KEYS[2], kept as long.
var procPutScript = lazyScript(`
if redis.call('HGET', KEYS[1], 'state') == 'lost' then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// Put implements policy.ProcessBoard.
func (s *RedisProcesses) Put(ctx context.Context, e policy.ProcessEntry, keep time.Duration) error {
	tty := "0"
	if e.TTY {
		tty = "1"
	}
	var sealed []byte
	if s.seal != nil {
		var err error
		if sealed, err = s.sealed(e); err != nil {
			return err
		}
	}
	args := []any{max(1, keep.Milliseconds()), e.ID,
		"id", e.ID, "owner", e.Owner, "replica", e.Replica, "state", e.State, "reason", e.Reason,
		"exit", e.ExitCode, "signal", e.Signal, "started", e.Started.UnixMilli(), "cpu", e.CPU.Milliseconds(),
		"tty", tty, "total", e.Total, "sealed", sealed}
	if err := procPutScript().Run(ctx, s.c, []string{s.entry(e.ID), s.owner(e.Owner)}, args...).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// procLoseScript marks the entry KEYS[1] lost if it is running and its
// replica's lease KEYS[2] is gone; it returns the state.
var procLoseScript = lazyScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if st == 'running' and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'state', 'lost', 'reason', 'lost')
  return 'lost'
end
return st
`)

// Get implements policy.ProcessBoard.
func (s *RedisProcesses) Get(ctx context.Context, id string) (policy.ProcessEntry, bool, error) {
	m, err := s.c.HGetAll(ctx, s.entry(id)).Result()
	if err != nil {
		return policy.ProcessEntry{}, false, fmt.Errorf("store: redis: %w", err)
	}
	if len(m) == 0 || m["id"] != id {
		return policy.ProcessEntry{}, false, nil
	}
	e := s.decodeEntry(m)
	if e.State == "running" {
		st, err := procLoseScript().Run(ctx, s.c, []string{s.entry(id), s.lease(e.Replica)}).Text()
		if errors.Is(err, redis.Nil) { // expired meanwhile
			return policy.ProcessEntry{}, false, nil
		}
		if err != nil {
			return policy.ProcessEntry{}, false, fmt.Errorf("store: redis: %w", err)
		}
		if st == policy.ProcessLost {
			e.State, e.Reason = policy.ProcessLost, policy.ProcessLost
		}
	}
	return e, true, nil
}

// List implements policy.ProcessBoard; the ids of entries that expired
// leave the owner's set.
func (s *RedisProcesses) List(ctx context.Context, owner string) ([]policy.ProcessEntry, error) {
	ids, err := s.c.SMembers(ctx, s.owner(owner)).Result()
	if err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	var out []policy.ProcessEntry
	for _, id := range ids {
		e, ok, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			s.c.SRem(ctx, s.owner(owner), id)
			continue
		}
		if e.Owner == owner {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *RedisProcesses) decodeEntry(m map[string]string) policy.ProcessEntry {
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(m[k], 10, 64)
		return n
	}
	e := policy.ProcessEntry{ID: m["id"], Owner: m["owner"], Replica: m["replica"],
		State: m["state"], Reason: m["reason"], ExitCode: int(num("exit")), Signal: m["signal"],
		Started: time.UnixMilli(num("started")), CPU: time.Duration(num("cpu")) * time.Millisecond, TTY: m["tty"] == "1",
		Total: num("total")}
	switch {
	case m["sealed"] == "":
		e.Withheld = withheldUnsealed
	case s.seal == nil || !s.open(&e, m["sealed"]):
		e.Withheld = withheldKey
	}
	return e
}
