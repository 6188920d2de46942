package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// states returns what every feed knows, in the order of Config.Daemons.
func (s *Server) states() []feedState {
	out := make([]feedState, len(s.feeds))
	for i, f := range s.feeds {
		out[i] = f.state()
	}
	return out
}

// view is what the page template gets.
type view struct {
	Approver string
	Version  uint64
	// Daemons says which daemons are served and how each is.
	Daemons  []daemonView
	Requests []requestView
	// Refused says, per request a daemon sent that does not hash as
	// announced, that it is not shown and why (escaped).
	Refused []string
	// Resolved are how the latest requests of the daemons that know the
	// passkey ended, for the receipts of the decisions made on the page.
	Resolved []resolvedView
	// Finished are how the latest allowed requests of those daemons ended
	// once they ran.
	Finished []finishedView
	// Focus is the element id of the request asked for with ?id=, when it
	// waits (on the first daemon that shows it).
	Focus string
}

// daemonView is one daemon as the page lists it.
type daemonView struct {
	Label string
	// State says whether it is connected and whether it knows the
	// signed-in passkey; Down is set when its channel is gone.
	State string
	Down  bool
}

// resolvedView is how a request ended (approval.MsgResolved): the daemon
// (its index in Config.Daemons), when it came (ended.seq), the request's
// id, the verdict and who or what decided it, escaped.
type resolvedView struct {
	Link            int
	Seq             uint64
	ID, Verdict, By string
}

// finishedView is how an allowed request ended (approval.MsgFinished):
// the daemon, when it came (ended.seq), the request's id, the status of
// the agent's answer and each stage's exit code, space-separated, all
// escaped.
type finishedView struct {
	Link             int
	Seq              uint64
	ID, Status, Exit string
}

// exitText is codes as the page's script reads them: space-separated.
func exitText(codes []int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, " ")
}

// label names daemon i of states for the page: the host name it sent,
// escaped; with how the human named it (the approver socket's path, "ssh
// root@HOST") only when another daemon served sent the same host name, or
// it sent none.
func label(states []feedState, i int) string {
	host, name := esc(states[i].hello.DaemonHost), esc(states[i].name)
	shared := false
	for j, o := range states {
		shared = shared || j != i && o.hello.DaemonHost == states[i].hello.DaemonHost
	}
	switch {
	case host != "" && shared && name != "":
		return host + " (" + name + ")"
	case host != "":
		return host
	}
	return name
}

// version is the version of everything the page shows: the sum of the
// feeds', each of which only grows.
func version(states []feedState) uint64 {
	var v uint64
	for _, st := range states {
		v += st.version
	}
	return v
}

// index serves the page's shell, the same for everyone: a navigation
// carries no session (it is not a cookie), so the page's script fetches
// what a signed-in browser sees from /api/page, with its session.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Origin is the address the passkeys sign for: the script tells a page
	// opened at another one (a tunnel on another local port) to open it.
	if err := s.tmpl.ExecuteTemplate(w, "index.html", struct{ Origin string }{s.cfg.Origin}); err != nil {
		s.log.Warn("web: render the page", "err", err)
	}
}

// page renders what the signed-in browser sees (page.html): the daemons,
// and the requests waiting on those that know its passkey, each section
// keyed by its element id and hash, for the script to merge into the page
// in place.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	states := s.states()
	var v view
	if sess, ok := s.session(r, states); ok {
		v.Approver, v.Version = esc(sess.key.Name), version(states)
		id := r.URL.Query().Get("id")
		for i, st := range states {
			dv := daemonView{Label: label(states, i)}
			switch {
			case st.err != nil:
				dv.Down = true
				dv.State = "disconnected (" + esc(st.err.Error()) + "): restart the web approver to reconnect"
			case !st.knows(sess.key):
				dv.State = "connected; it does not know your passkey, so its requests are not shown"
				if st.keysErr != "" {
					dv.State += " (" + esc(st.keysErr) + ")"
				} else if !st.keysSeen {
					dv.State += " (it sent no passkeys: an older daemon?)"
				}
			default:
				dv.State = "connected"
				me := st.identity(sess.key)
				for _, p := range st.pending {
					rv := describe(p, s.now(), st.hello.DaemonHost)
					rv.Link, rv.From = i, dv.Label
					if p.Request != nil {
						rv.approvedBy(p.Request.Approvals, st.approved[p.ID], me)
					}
					v.Requests = append(v.Requests, rv)
					if v.Focus == "" && id != "" && p.ID == id {
						v.Focus = rv.Elem()
					}
				}
				for _, m := range st.finished {
					v.Finished = append(v.Finished, finishedView{Link: i, Seq: m.seq, ID: esc(m.ID), Status: esc(m.Status), Exit: exitText(m.ExitCodes)})
				}
				for _, m := range st.resolved {
					v.Resolved = append(v.Resolved, resolvedView{Link: i, Seq: m.seq, ID: esc(m.ID), Verdict: esc(string(m.Verdict)), By: esc(m.By)})
				}
				for _, rf := range st.refused {
					v.Refused = append(v.Refused, fmt.Sprintf("agent-sudod on %s sent request %s, which does not match the hash it announced: "+
						"it is not shown and cannot be decided here (%s)", dv.Label, esc(rf.id), esc(rf.err)))
				}
			}
			v.Daemons = append(v.Daemons, dv)
		}
	}
	if v.Approver == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "sign in with your passkey first"})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, "page.html", v); err != nil {
		s.log.Warn("web: render the page", "err", err)
	}
}

// state tells the page the version of the list, so that it reloads when
// a request arrives or leaves.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": version(s.states())})
}
