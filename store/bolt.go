package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

var bucket = []byte("results")

// Bolt is a Store in an embedded bbolt file. One process holds the file at a
// time; another waits for it up to the open timeout.
type Bolt struct {
	db *bolt.DB
}

// BoltOptions configure OpenBolt.
type BoltOptions struct {
	Timeout time.Duration // how long to wait for another process's lock; 0: 5 s
}

// OpenBolt opens (creating, mode 0600 in a 0700 folder) the store at path
// and drops expired entries.
func OpenBolt(path string, o BoltOptions) (*Bolt, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.Timeout})
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	s := &Bolt{db: db}
	if err := s.purge(time.Now()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// A stored value is 8 bytes of expiry (Unix nanoseconds, 0: never), then the value.

// Get implements Store.
func (s *Bolt) Get(_ context.Context, key string) ([]byte, bool, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(key))
		if len(v) < 8 || expired(v, time.Now()) {
			return nil
		}
		out = append([]byte(nil), v[8:]...)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: %w", err)
	}
	return out, out != nil, nil
}

// Put implements Store. It returns after the entry is on disk.
func (s *Bolt) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	v := make([]byte, 8+len(value))
	if ttl > 0 {
		binary.BigEndian.PutUint64(v, uint64(time.Now().Add(ttl).UnixNano()))
	}
	copy(v[8:], value)
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), v)
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

func (s *Bolt) purge(now time.Time) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) < 8 || expired(v, now) {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func expired(v []byte, now time.Time) bool {
	exp := binary.BigEndian.Uint64(v)
	return exp != 0 && now.UnixNano() >= int64(exp)
}

// Close implements Store.
func (s *Bolt) Close() error { return s.db.Close() }
