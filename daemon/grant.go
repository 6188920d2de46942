package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

type grant struct {
	approval.Grant
	shown *approval.Shown // what was approved, for exact matching
	// listed is Grant as listings show it (pipeline elided when long).
	listed approval.Grant
}

// SetGrantTTL makes the session grants made from now on last ttl; grants
// already made keep their expiry. A configuration reload calls it.
func (b *broker) SetGrantTTL(ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.grantTTL = ttl
}

// Grants returns the session grants that have not expired, as a listing:
// at most MaxGrantsListed of them, each pipeline longer than
// MaxGrantPipeline elided, and how many were left out.
func (b *broker) Grants() (grants []approval.Grant, omitted int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireGrants()
	return b.listGrants()
}

// listGrants is Grants with b.mu held. Each grant's listing carries the
// time it has left (ExpiresInMS), measured on the clock that ends it: b.now's
// elapsed-time reading, which a clock step does not move.
func (b *broker) listGrants() ([]approval.Grant, int) {
	n := min(len(b.grants), approval.MaxGrantsListed)
	out := make([]approval.Grant, n)
	now := b.now()
	for i, g := range b.grants[:n] {
		out[i] = g.listed
		out[i].ExpiresInMS = max(0, g.Expires.Sub(now)).Milliseconds()
	}
	return out, len(b.grants) - n
}

// Revoke removes the session grant id.
func (b *broker) Revoke(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.grants, func(g *grant) bool { return g.ID == id })
	if i < 0 {
		return fmt.Errorf("%w %q", approval.ErrNoGrant, id)
	}
	b.grants = slices.Delete(b.grants, i, i+1)
	b.broadcastGrants()
	return nil
}

func (b *broker) broadcastGrants() {
	gs, omitted := b.listGrants()
	b.broadcast(approval.Message{Type: approval.MsgGrants, Grants: gs, GrantsOmitted: omitted})
}

func (b *broker) addGrant(s *approval.Shown, by string) *grant {
	b.nextID++
	now := b.now()
	g := &grant{
		Grant: approval.Grant{
			ID: "g" + strconv.Itoa(b.nextID), Session: s.Session, UID: s.Peer.UID,
			Pipeline: s.Pipeline, EnvKeys: slices.Sorted(maps.Keys(s.Env)), Privileged: s.Privileged,
			Cwd: s.Cwd, By: by, Created: now, Expires: now.Add(b.grantTTL),
		},
		shown: s,
	}
	if s.Stdin != nil {
		g.StdinSHA256 = s.Stdin.SHA256
	}
	g.listed = listing(g.Grant)
	b.grants = append(b.grants, g)
	b.broadcastGrants()
	return g
}

func (b *broker) expireGrants() {
	now := b.now()
	n := len(b.grants)
	b.grants = slices.DeleteFunc(b.grants, func(g *grant) bool { return !now.Before(g.Expires) })
	if len(b.grants) != n {
		b.broadcastGrants()
	}
}

// matchGrant finds a live grant covering s from uid. A grant covers only the
// exact same request: every argument, program (symlink chain, device, inode
// and content hash; never a program someone other than root can change),
// env value, resolved cwd, stdin byte, privilege, target user, agent
// forwarding, session and uid.
func (b *broker) matchGrant(s *approval.Shown, uid uint32) *grant {
	b.expireGrants()
	for _, g := range b.grants {
		a := g.shown
		if a.Session == s.Session && g.UID == uid && a.Peer.UID == s.Peer.UID &&
			a.Privileged == s.Privileged && a.RunAs == s.RunAs && a.ForwardAgent == s.ForwardAgent &&
			a.Cwd == s.Cwd && slices.EqualFunc(a.Programs, s.Programs, sameProgram) && maps.Equal(a.Env, s.Env) &&
			sameStdin(a.Stdin, s.Stdin) &&
			slices.EqualFunc(a.Pipeline, s.Pipeline, slices.Equal) {
			return g
		}
	}
	return nil
}

// sameProgram reports whether a and b are the same file reached the same
// way: chain, device, inode and content hash.
func sameProgram(a, b approval.Program) bool {
	return slices.Equal(a.Chain, b.Chain) && a.Dev == b.Dev && a.Ino == b.Ino && a.SHA256 == b.SHA256 &&
		len(a.Writable) == 0 && len(b.Writable) == 0
}

// sameStdin reports whether two requests feed exactly the same input.
func sameStdin(a, b *approval.StdinShown) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return bytes.Equal(a.Data, b.Data)
}

// listing returns g as a grants listing shows it: with its pipeline
// replaced by its size and SHA-256 when the pipeline's JSON is longer than
// MaxGrantPipeline.
func listing(g approval.Grant) approval.Grant {
	b, err := json.Marshal(g.Pipeline)
	if err == nil && len(b) <= approval.MaxGrantPipeline {
		return g
	}
	sum := sha256.Sum256(b)
	e := &approval.Elided{Bytes: len(b), SHA256: hex.EncodeToString(sum[:]), Stages: len(g.Pipeline)}
	for _, st := range g.Pipeline {
		e.Args += len(st)
	}
	g.Pipeline, g.Elided = nil, e
	return g
}
