package rpc

import (
	"context"
	"slices"
	"strings"
)

// Metadata is a call's key/value pairs besides its arguments. NewLife has
// no header block: a client merges them into the call's argument object
// as it merges its token and ApiClient.Headers (docs/PROTOCOL.md §5.2a),
// and a server finds them there. A client sends the metadata of a call's
// context ([AppendToOutgoingContext]); a server gives its handler and
// interceptors the entries under reserved keys and under its
// [Config.MetadataKeys] ([CallInfo.Metadata]).
type Metadata map[string]string

// Get returns the value of key, matched exactly, then in any case (NewLife
// reads an argument object case-insensitively).
func (md Metadata) Get(key string) string {
	if v, ok := md[key]; ok {
		return v
	}
	for k, v := range md {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

type outgoingKey struct{}

// outgoing is a context's metadata to send: key, value, key, value, …, in
// the order added (never changed once in a context: appending copies).
type outgoing struct{ kv []string }

// AppendToOutgoingContext returns a context whose calls carry the key/value
// pairs kv (key, value, key, value, …) besides those ctx carries
// already (grpc-go's metadata.AppendToOutgoingContext). A client merges
// them into the call's argument object after its token and
// ClientConfig.Headers, in the order added, unless the object has a key
// of the name already (in any case, as NewLife's client merges its
// Headers); a call without arguments sends an object of them. A bare
// value (a number, string or bool), bytes and an array have no room for
// them: such a call sends none, as NewLife's client sends no Headers with
// them. Over HTTP they go in the JSON body. A server sees them in
// [CallInfo.Metadata] when they are among its [Config.MetadataKeys]
// (binding sees them as any key of the argument object). It panics when
// kv has an odd length.
func AppendToOutgoingContext(ctx context.Context, kv ...string) context.Context {
	if len(kv)%2 == 1 {
		panic("rpc: AppendToOutgoingContext got an odd number of strings")
	}
	if len(kv) == 0 {
		return ctx
	}
	var prev []string
	if old, _ := ctx.Value(outgoingKey{}).(*outgoing); old != nil {
		prev = old.kv
	}
	return context.WithValue(ctx, outgoingKey{}, &outgoing{kv: append(slices.Clip(prev), kv...)})
}

// OutgoingMetadata returns the metadata the calls made with ctx carry
// (nil: none). A key added twice keeps its first value, the one sent.
func OutgoingMetadata(ctx context.Context) Metadata {
	o, _ := ctx.Value(outgoingKey{}).(*outgoing)
	if o == nil {
		return nil
	}
	md := make(Metadata, len(o.kv)/2)
	for i := 0; i < len(o.kv); i += 2 {
		if _, dup := md[o.kv[i]]; !dup {
			md[o.kv[i]] = o.kv[i+1]
		}
	}
	return md
}

// metadataOf collects the entries of data under reserved keys but Token
// and under keys: n of them, which scanCall counted (walking the same
// object).
func metadataOf(data []byte, keys *keySet, n int) Metadata {
	md := make(Metadata, min(n, 16)) // n counts repeated keys too: a hint, not a size
	eachEntry(data, false, func(k, v []byte) {
		if rk := keys.kind(k); rk != rkNone && rk != rkToken {
			md[string(k)] = textOf(v)
		}
	})
	return md
}
