package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lifenet/lifenet/codec"
)

// invokeHTTP calls an action of an http:// server: POST with the
// arguments as a JSON object (GET without arguments), the answer in
// NewLife's {"action","code","data"} envelope.
func (c *Client) invokeHTTP(ctx context.Context, action string, args, result any) error {
	var body []byte
	if args != nil {
		b, k, err := appendValue(nil, args)
		if err != nil {
			return err
		}
		if k != kindJSON || !isJSON(b) || b[0] != '{' {
			return fmt.Errorf("%w: an HTTP call takes an object (struct or map) argument, not %T", ErrArgs, args)
		}
		body = mergeKeys(b, 0, "", c.cfg.Headers)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	var last error
	for range c.addrs {
		k := int(c.server.Load()) % len(c.addrs)
		resp, err := c.post(ctx, k, action, body)
		if err == nil {
			return decodeHTTP(resp, action, result, c.cfg.Framer.MaxFrame)
		}
		last = err
		if ctx.Err() != nil {
			return fmt.Errorf("rpc: %s: %w", action, codec.ErrTimeout)
		}
		c.server.CompareAndSwap(uint32(k), uint32(k+1))
	}
	return fmt.Errorf("%w: %w", ErrNoServer, last)
}

func (c *Client) post(ctx context.Context, k int, action string, body []byte) (*http.Response, error) {
	u := *c.addrs[k]
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + action
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t := c.Token(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	return c.web.Do(req)
}

// decodeHTTP reads an HTTP answer: the envelope, or a raw body.
func decodeHTTP(resp *http.Response, action string, result any, limit int) error {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("rpc: %s: %w", action, err)
	}
	if len(raw) > limit {
		return fmt.Errorf("rpc: %s: answer larger than %d bytes", action, limit)
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if resp.StatusCode >= 300 {
			return &ApiError{Code: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
		}
		return decodeResult(raw, result)
	}
	if resp.StatusCode >= 300 { // a UseHttpStatus server: the code is the status
		return &ApiError{Code: resp.StatusCode, Message: trimText(raw)}
	}
	if len(raw) == 0 {
		return nil
	}
	var env struct {
		Action *string         `json:"action"`
		Code   *int            `json:"code"`
		Data   json.RawMessage `json:"data"`
	}
	if json.Unmarshal(raw, &env) != nil || env.Action == nil || env.Code == nil {
		env.Data = raw // no envelope: a UseHttpStatus server's bare value
	} else if *env.Code != CodeOK && *env.Code != 200 {
		return &ApiError{Code: *env.Code, Message: trimText(env.Data)}
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
