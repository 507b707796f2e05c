package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"

	"github.com/lifenet/lifenet/codec"
)

// invokeHTTP calls an action of an http:// server: POST with the
// arguments as a JSON object (GET without arguments), the answer in
// NewLife's {"action","code","data"} envelope.
//
// The call's metadata and remaining time (SendTimeout) go in the body as
// keys, as over SRMP (a call without arguments then POSTs an object of
// them); its trace context goes as a traceparent header, as NewLife's
// ApiHttpClient sends it. iv, when not nil, keeps the answer's data.
func (c *Client) invokeHTTP(ctx context.Context, action string, args, result any, iv *Invocation) error {
	var xs extras
	x := c.extrasOf(ctx, &xs, false)
	var trace string
	if x != nil && x.trace != nil {
		trace = x.trace.String()
		x.trace = nil
	}
	var body []byte
	if args != nil || x.makesObject() {
		b, k, headers := []byte("{}"), kindJSON, map[string]string(nil) // no headers without arguments, as over SRMP
		if args != nil {
			var err error
			if b, k, err = appendValue(nil, args); err != nil {
				return err
			}
			headers = c.cfg.Headers
		}
		if k != kindJSON || !isJSON(b) || b[0] != '{' {
			return fmt.Errorf("%w: an HTTP call takes an object (struct or map) argument, not %T", ErrArgs, args)
		}
		body, _ = mergeKeys(b, 0, "", headers, x)
		if len(body) > c.cfg.Framer.MaxFrame {
			return fmt.Errorf("rpc: %s: %w: request body of %d bytes, limit %d (Framer.MaxFrame)", action, ErrTooLarge, len(body), c.cfg.Framer.MaxFrame)
		}
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout) // the earlier of the two deadlines, as over SRMP
	defer cancel()
	return c.eachServer(func(k int) (bool, error) {
		if iv != nil {
			iv.peer, iv.sent = c.addrs[k], len(body)
		}
		resp, sent, err := c.post(ctx, k, action, body, trace)
		if err == nil {
			var raw *[]byte
			if iv != nil {
				raw = &iv.result
			}
			err = decodeHTTP(resp, action, result, c.cfg.Framer.MaxFrame, raw)
			if err == nil || ctx.Err() == nil {
				return true, err
			}
			// The body stopped coming before a deadline: the time's error below.
		}
		switch {
		case caller.Err() != nil:
			return true, localError(action, caller.Err())
		case ctx.Err() != nil: // the client's Timeout
			return true, localError(action, codec.ErrTimeout)
		case sent: // the server may have run it: no other server gets it again
			return true, fmt.Errorf("rpc: %s: %w: %w", action, codec.ErrConnClosed, err)
		}
		return false, err
	})
}

// post sends one call to server k; sent reports whether the request was
// written, so that a failure after it may have run the call.
func (c *Client) post(ctx context.Context, k int, action string, body []byte, traceparent string) (resp *http.Response, sent bool, err error) {
	u := *c.addrs[k]
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + action
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	var wrote atomic.Bool // set on the transport's writing goroutine
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, u.String(), rd)
	if err != nil {
		return nil, false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t := c.Token(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err = c.web.Do(req)
	return resp, wrote.Load(), err
}

// decodeHTTP reads an HTTP answer: the envelope, or a raw body; raw, when
// not nil, gets the answer's data.
func decodeHTTP(resp *http.Response, action string, result any, limit int, raw *[]byte) error {
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("rpc: %s: %w", action, ErrStreamAction) // its events may never end: not read
	}
	all, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("rpc: %s: %w", action, err)
	}
	if len(all) > limit {
		return fmt.Errorf("rpc: %s: %w: answer larger than %d bytes (Framer.MaxFrame)", action, ErrTooLarge, limit)
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if resp.StatusCode >= 300 {
			return apiErrorOf(action, resp.StatusCode, strings.TrimSpace(string(all)))
		}
		if raw != nil {
			*raw = all
		}
		return decodeResult(all, result)
	}
	if len(all) == 0 && resp.StatusCode < 300 {
		return nil
	}
	var env struct {
		Action *string         `json:"action"`
		Code   *int            `json:"code"`
		Data   json.RawMessage `json:"data"`
	}
	enveloped := json.Unmarshal(all, &env) == nil && env.Action != nil && env.Code != nil
	switch {
	case enveloped && *env.Code != CodeOK && *env.Code != 200: // an error's envelope, whatever the status
		return apiErrorOf(action, *env.Code, trimText(env.Data))
	case resp.StatusCode >= 300: // a UseHttpStatus server: the code is the status
		return apiErrorOf(action, resp.StatusCode, trimText(all))
	case !enveloped:
		env.Data = all // no envelope: a UseHttpStatus server's bare value
	}
	if raw != nil && string(env.Data) != "null" {
		*raw = env.Data
	}
	if len(env.Data) == 0 || string(env.Data) == "null" || result == nil {
		return nil
	}
	switch r := result.(type) {
	case *string:
		*r = trimText(env.Data)
		return nil
	case *[]byte:
		*r = append((*r)[:0], env.Data...)
		return nil
	}
	return unmarshalLenient(env.Data, result)
}
