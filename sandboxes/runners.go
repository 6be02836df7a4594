package sandboxes

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/runner"
)

// Runners is the Backend of `backend: runner`: a fixed set of `toolgate
// runner` processes, each sandbox id placed on one of them by rendezvous
// hashing (the same choice on every replica, and only the sandboxes of a
// runner added or removed move). A runner that does not answer makes its
// sandboxes unavailable; they are never placed on another by themselves.
type Runners struct {
	urls   []string
	secret []byte
	client *http.Client
}

// NewRunners returns the Backend of the runners at urls (base URLs, e.g.
// http://runner.tools.svc:8790), their tokens derived from secret; client
// reaches them (nil: http.DefaultClient).
func NewRunners(urls []string, secret []byte, client *http.Client) (*Runners, error) {
	if len(urls) == 0 {
		return nil, errors.New("sandboxes: no runner URL")
	}
	if err := runner.CheckSecret(secret); err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	r := &Runners{secret: secret, client: client}
	for _, u := range urls {
		r.urls = append(r.urls, strings.TrimRight(u, "/"))
	}
	return r, nil
}

// place is the runner of id: the URL with the highest hash of (URL, id).
func (r *Runners) place(id string) string {
	best, bestScore := "", uint64(0)
	for _, u := range r.urls {
		sum := sha256.Sum256([]byte(u + "\x00" + id))
		if s := binary.BigEndian.Uint64(sum[:8]); best == "" || s > bestScore {
			best, bestScore = u, s
		}
	}
	return best
}

// Ensure makes sandbox id on its runner (PUT /sandboxes/{id}).
func (r *Runners) Ensure(ctx context.Context, id string) (string, bool, error) {
	return r.ensureAt(ctx, id, "")
}

// Delete removes sandbox id from its runner (DELETE /sandboxes/{id}).
func (r *Runners) Delete(ctx context.Context, id string) error {
	_, err := r.deleteAt(ctx, id, "")
	return err
}

// at is the runner of sandbox id whose endpoint was endpoint, if that
// runner is still one of the URLs (a sandbox stays where it was made when
// runners are added); "" otherwise. Only a listed runner is ever sent a
// token: an endpoint read from the map is not trusted with one.
func (r *Runners) at(id, endpoint string) string {
	base, ok := strings.CutSuffix(endpoint, "/sandboxes/"+id+"/mcp")
	if ok && slices.Contains(r.urls, base) {
		return base
	}
	return ""
}

// ensureAt makes sandbox id (PUT /sandboxes/{id}) on the runner of
// endpoint, where the map says it is, or, when that runner is no longer
// listed (or there is none), on the runner place chooses.
func (r *Runners) ensureAt(ctx context.Context, id, endpoint string) (string, bool, error) {
	base := r.at(id, endpoint)
	if base == "" {
		base = r.place(id)
	}
	code, _, err := request(ctx, r.client, r.secret, http.MethodPut, base+"/sandboxes/"+id, id)
	if err != nil {
		return "", false, err
	}
	if code != http.StatusOK && code != http.StatusCreated {
		return "", false, fmt.Errorf("%w: runner %s answered %d to making sandbox %s", ErrUnavailable, base, code, id)
	}
	return base + "/sandboxes/" + id + "/mcp", code == http.StatusCreated, nil
}

// deleteAt removes sandbox id (DELETE /sandboxes/{id}) from the runner of
// endpoint ("": the runner place chooses), and returns the process events
// the runner says the sandbox kept that no result carried (those after
// its last call, the ends of the processes the delete stopped), if any,
// also with an error. A runner no longer listed is out of this gateway's
// reach: nothing is sent, and the sandbox is left to whoever stops that
// runner.
func (r *Runners) deleteAt(ctx context.Context, id, endpoint string) (*runner.ProcessEvents, error) {
	base := r.place(id)
	if endpoint != "" {
		if base = r.at(id, endpoint); base == "" {
			return nil, nil
		}
	}
	return DeleteOnRunner(ctx, r.client, r.secret, base, id)
}

// DeleteOnRunner deletes sandbox id from the runner at base (DELETE
// base/sandboxes/{id}, with id's token under secret) and returns the
// process events the runner says the sandbox kept that no result carried
// (those after its last call, the ends of the processes the delete
// stopped), if any, also with an error; one reaching the runner or
// answered other than 200 or 204 wraps ErrUnavailable.
func DeleteOnRunner(ctx context.Context, client *http.Client, secret []byte, base, id string) (*runner.ProcessEvents, error) {
	code, body, err := request(ctx, client, secret, http.MethodDelete, base+"/sandboxes/"+id, id)
	if err != nil {
		return nil, err
	}
	var kept *runner.ProcessEvents
	var d runner.DeletedEvents
	if len(body) > 0 && json.Unmarshal(body, &d) == nil && d.ProcessEvents.Epoch != "" {
		kept = &d.ProcessEvents
	}
	if code != http.StatusNoContent && code != http.StatusOK {
		return kept, fmt.Errorf("%w: runner %s answered %d to deleting sandbox %s", ErrUnavailable, base, code, id)
	}
	return kept, nil
}

// Count adds up the sandboxes of every runner (GET /sandboxes).
func (r *Runners) Count(ctx context.Context) (int, error) {
	n := 0
	for _, base := range r.urls {
		code, body, err := request(ctx, r.client, r.secret, http.MethodGet, base+"/sandboxes", runner.ListID)
		if err != nil {
			return 0, err
		}
		var list struct {
			Sandboxes []string `json:"sandboxes"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
			return 0, fmt.Errorf("%w: runner %s answered %d to listing its sandboxes", ErrUnavailable, base, code)
		}
		n += len(list.Sandboxes)
	}
	return n, nil
}

// runnerRequestTimeout bounds one request to a runner (make, delete,
// list a sandbox): one that accepts and never answers must not hold the
// reaper, or a call, for ever.
const runnerRequestTimeout = 30 * time.Second

// request sends one request through client with the token of id under
// secret; a failure to reach the runner is ErrUnavailable.
func request(ctx context.Context, client *http.Client, secret []byte, method, url, id string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, runnerRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+runner.Token(secret, id))
	// Making, deleting and listing are idempotent: sent again on a new
	// connection when a kept one turns out closed (a runner restarted).
	req.Header["Idempotency-Key"] = nil
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return resp.StatusCode, body, nil
}
