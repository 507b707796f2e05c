package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeTracesWritesSpans: `lifenet serve --metrics … --traces 1
// --traces-out FILE` writes a JSON line per call's span, named by its
// action, which the file holds once serve stopped.
func TestServeTracesWritesSpans(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0", "--traces", "1", "--traces-out", file}, pw, io.Discard)
		pw.Close()
	}()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var addr string
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited %d before READY", <-done)
			}
			if rest, ok := strings.CutPrefix(l, "READY tcp://"); ok {
				addr, _, _ = strings.Cut(rest, " ")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no READY line in 30 s")
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"call", addr, "Bench/Add", "a=1", "b=2"}, &out, &errOut); code != 0 || out.String() != "3\n" {
		t.Fatalf("call: exit %d, %q %q", code, out.String(), errOut.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var span struct {
		Name     string
		SpanKind int
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &span); err != nil || span.Name != "Bench/Add" || span.SpanKind != 2 {
		t.Errorf("the file holds %q (%v), want one server span named Bench/Add", b, err)
	}
}
