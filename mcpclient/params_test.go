package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// TestCallParamsReused: the params of upstream calls are used again once a
// call has returned (callParams); calls in flight together, with progress
// tokens (chatty) and without, each send their own name and arguments and
// get their own answer (a params given back too early would send another
// call's text; -race sees a write to params the SDK still reads).
func TestCallParamsReused(t *testing.T) {
	u, err := mcpclient.Connect(context.Background(), stdio(t, "up"), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	echo, chatty := find(t, tools, "up__echo"), find(t, tools, "up__chatty")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				text := fmt.Sprintf("call %d of goroutine %d", i, g)
				args, _ := json.Marshal(map[string]string{"text": text})
				tl := echo
				if i%4 == g%4 {
					tl = chatty
				}
				res, err := tl.Run(context.Background(), tool.Call{Name: tl.Definition().Name, Args: args})
				switch {
				case err != nil || res.Error != nil:
					errs <- fmt.Errorf("%s: %v %+v", text, err, res.Error)
					return
				case tl == chatty && (len(res.Content) == 0 || res.Content[0].Text != "done"):
					errs <- fmt.Errorf("%s: chatty answered %+v", text, res.Content)
					return
				case tl == echo && (len(res.Content) == 0 || res.Content[0].Text != text):
					errs <- fmt.Errorf("%s: echo answered %+v", text, res.Content)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
