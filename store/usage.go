package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// MaxUsage is how many usage records a usage log keeps: older ones are
// dropped as new ones come.
const MaxUsage = 100_000

var usageBucket = []byte("usage")

// BoltUsage is the usage log of tool search (selection.UsageLog) in an
// embedded bbolt file: records under ascending sequence numbers, the
// cursor the last number read, in hex.
type BoltUsage struct {
	db *bolt.DB
}

// OpenBoltUsage opens (creating, mode 0600 in a 0700 folder) the usage log
// at path; another process holding it makes it wait up to timeout.
func OpenBoltUsage(path string, timeout time.Duration) (*BoltUsage, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	return &BoltUsage{db: db}, nil
}

// AppendUsage adds one record, dropping the oldest beyond MaxUsage.
func (s *BoltUsage) AppendUsage(_ context.Context, record []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(usageBucket)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		if err := b.Put(k[:], record); err != nil {
			return err
		}
		if seq > MaxUsage {
			c := b.Cursor()
			for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq-MaxUsage; k, _ = c.Next() {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// ReadUsage returns the records after cursor, oldest first.
func (s *BoltUsage) ReadUsage(_ context.Context, cursor string) ([][]byte, string, error) {
	var after uint64
	if cursor != "" {
		b, err := hex.DecodeString(cursor)
		if err != nil || len(b) != 8 {
			return nil, cursor, fmt.Errorf("store: usage cursor %q", cursor)
		}
		after = binary.BigEndian.Uint64(b)
	}
	var out [][]byte
	next := cursor
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(usageBucket)
		if b == nil {
			return nil
		}
		var from [8]byte
		binary.BigEndian.PutUint64(from[:], after+1)
		c := b.Cursor()
		for k, v := c.Seek(from[:]); k != nil; k, v = c.Next() {
			out = append(out, append([]byte(nil), v...))
			next = hex.EncodeToString(k)
		}
		return nil
	})
	if err != nil {
		return nil, cursor, fmt.Errorf("store: %w", err)
	}
	return out, next, nil
}

// Close closes the file.
func (s *BoltUsage) Close() error { return s.db.Close() }

// RedisUsage is the usage log of tool search in a Redis stream that every
// replica appends to and reads: each learns from all. The stream is capped
// at about MaxUsage entries; the cursor is a stream entry id.
type RedisUsage struct {
	c   redis.UniversalClient
	key string
}

// NewRedisUsage returns the usage log under prefix in c (which it does not
// close).
func NewRedisUsage(c redis.UniversalClient, prefix string) *RedisUsage {
	return &RedisUsage{c: c, key: prefix + "usage"}
}

// AppendUsage adds one record to the stream.
func (s *RedisUsage) AppendUsage(ctx context.Context, record []byte) error {
	err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: s.key, MaxLen: MaxUsage, Approx: true, Values: []any{"r", record}}).Err()
	if err != nil {
		return fmt.Errorf("store: usage: %w", err)
	}
	return nil
}

// ReadUsage returns the entries after cursor (all of them for ""), oldest
// first, at most 10,000 at a time.
func (s *RedisUsage) ReadUsage(ctx context.Context, cursor string) ([][]byte, string, error) {
	from := cursor
	if from == "" {
		from = "0"
	}
	res, err := s.c.XRead(ctx, &redis.XReadArgs{Streams: []string{s.key, from}, Count: 10000, Block: -1}).Result()
	if err == redis.Nil {
		return nil, cursor, nil
	}
	if err != nil {
		return nil, cursor, fmt.Errorf("store: usage: %w", err)
	}
	var out [][]byte
	next := cursor
	for _, st := range res {
		for _, m := range st.Messages {
			if v, ok := m.Values["r"].(string); ok {
				out = append(out, []byte(v))
			}
			next = m.ID
		}
	}
	return out, next, nil
}
