package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// unlockScript deletes the lock KEYS[1] only while it holds its holder's
// token ARGV[1].
var unlockScript = lazyScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// tryLock takes the lock key for ttl unless another holds it: the one lock
// of the package (RedisBlobs.Lock waits on it, RedisSandboxes.Lock tries it
// once). The key holds a random token of its holder; release deletes it
// only while it still holds that token, so a holder whose ttl passed never
// frees another's lock.
func tryLock(ctx context.Context, c redis.UniversalClient, key string, ttl time.Duration) (release func(), ok bool, err error) {
	token := rand.Text()
	ok, err = c.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, false, fmt.Errorf("store: redis: %w", err)
	}
	if !ok {
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		unlockScript().Run(ctx, c, []string{key}, token)
	}, true, nil
}
