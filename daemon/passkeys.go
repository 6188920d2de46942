package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// keysPoll is how often a signed-only connection's passkeys are checked
// for a change, and keysSettle how old a change must be before a stamp is
// trusted to show the next one.
const (
	keysPoll   = time.Second
	keysSettle = 2 * time.Second
)

// watchKeys sends the passkeys of ks through send at once, then checks
// them every poll (keysPoll when zero) and sends them again when they
// changed, until ctx ends or send fails. A stamp that did not change is
// not read further, so the work is a stat per poll. When the passkeys
// cannot be read, the message carries no key and the reason in Error: the
// connection's relay then signs nobody in.
func watchKeys(ctx context.Context, ks approval.KeySource, poll time.Duration, send func(approval.Message) bool) {
	if poll <= 0 {
		poll = keysPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var last string
	var sent []byte
	settled := false
	for {
		stamp, changed, err := ks.KeysStamp()
		if err != nil || stamp != last || !settled {
			m := approval.Message{Type: approval.MsgPasskeys}
			keys, kerr := ks.PublicKeys()
			switch {
			case err != nil:
				m.Error = "the daemon cannot read its passkeys: " + err.Error()
			case kerr != nil:
				m.Error = "the daemon cannot read its passkeys: " + kerr.Error()
			default:
				m.Passkeys = append(m.Passkeys, keys...)
			}
			b, merr := json.Marshal(m)
			if merr != nil {
				// The keys cannot be listed: the relay signs nobody in,
				// and is told why.
				m = approval.Message{Type: approval.MsgPasskeys, Error: "the daemon cannot encode its passkeys: " + merr.Error()}
				b, merr = json.Marshal(m)
			}
			if merr == nil && !bytes.Equal(b, sent) {
				if !send(m) {
					return
				}
				sent = b
			}
			last, settled = stamp, err == nil && time.Since(changed) > keysSettle
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
