// Package rules decides, from rules the human wrote in the daemon's
// configuration, whether a pipeline may run without asking, must be refused,
// or needs a human's approval.
//
// It exists so that the decision that lets a command run as root without a
// human looking at it is made in one small, pure, exhaustively tested place:
// the package does no I/O, keeps no state between calls, and an [Engine] is
// immutable once built, so it is safe for concurrent use.
//
// # Rules
//
// A [Rule] has an [Action] ("allow", "deny" or "ask"), a Match list of
// per-argument patterns, and optional constraints: Privileged (the rule
// applies only when the request's privileged flag equals it), Session (a
// pattern the request's session name must match), and User, UID and Group
// (the peer the kernel reported must be that user, have that uid, or be in
// that group). The session is a label the client chooses and authenticates
// nothing; the peer's identity is the only thing in a [Query] the requester
// cannot choose. User and group names are resolved by [Accounts] when the
// engine is built, so that a misspelt name fails loudly.
//
// # What an allow rule needs besides its match
//
// A rule that denies or asks can only make a decision more careful, so it
// applies whenever its match and constraints hold. A rule that allows lets a
// command run as root unseen, so it applies only when, in addition:
//
//   - every argument one of its patterns' wildcards covered is of the kind
//     the pattern describes (see "Arguments an allow rule accepts");
//   - every environment variable the request carries is listed in its Env
//     (a name, a "PREFIX*", or "*"): variables change what programs do, and
//     debconf, for one, evaluates DEBIAN_FRONTEND as code;
//   - the request does not forward the human's SSH agent, or the rule sets
//     ForwardAgent: handing over the agent is a decision of its own.
//
// An allow rule that fails one of these is passed over (recorded in
// [StageDecision].Passed, so the reason can say why) and later rules are
// tried, so a later deny rule still denies and a later allow rule that does
// permit the variable still allows.
//
// # Arguments an allow rule accepts
//
// A pattern is matched as a string but read by the program as a path or an
// option: "/var/log/*" matches "/var/log/../../etc/shadow". So for an allow
// rule, the text a wildcard covers must stay within what the pattern
// describes:
//
//   - no control characters and valid UTF-8;
//   - a pattern that begins with a wildcard matches no argument that begins
//     with '-', so that "*.service" never becomes the option -Hx.service;
//   - a pattern whose leading literal text contains '/' ("/var/log/*",
//     "--file=/var/log/*") allows only a clean path below that text's last
//     '/': no ".", ".." or empty component, no trailing '/' unless the
//     pattern ends with one;
//   - a pattern whose first '/' comes after a wildcard ("*/x") allows only a
//     clean absolute path;
//   - a pattern without '/' ("*.conf", "--file=*") describes a name: it
//     allows no argument containing '/', and no "." or ".." between '=' and
//     ':' separators.
//
// Literal patterns are what the author wrote and are accepted as written.
// The engine does no I/O, so it cannot see symbolic links or the request's
// working directory; the documentation tells rule authors so.
//
// # Patterns
//
// Each element of Match is matched against one argument, in full:
//
//   - '*' matches any run of characters, including none and including '/',
//     but never crosses into the next argument (an allow rule further
//     restricts what it may cover, see above);
//   - '?', '[' and every other character are literal;
//   - '\*' is a literal star and '\\' a literal backslash; a backslash
//     before anything else, or at the end, makes the rule invalid, so that a
//     pattern never silently means something else than intended;
//   - the element "**", when it is the last one, matches zero or more
//     remaining arguments. "**" anywhere else, including as the program,
//     makes the rule invalid. Without a trailing "**" the number of
//     arguments must be exactly the number of patterns.
//
// The Session constraint uses the same pattern syntax; it is matched against
// the whole session name.
//
// # The program and trusted directories
//
// The daemon resolves every stage's program to a clean absolute path (with
// its secure PATH) before the rules run, and hands the engine that path as
// [Stage].Program. Match[0] is matched against it in one of two ways:
//
//   - a pattern containing '/' must start with '/' and is matched against the
//     full path: "/usr/bin/apt" or "/opt/tools/*";
//   - a pattern without '/' (a bare name such as "apt" or "systemctl") is
//     matched against the path's base name, and only when the program's
//     directory is one of the engine's trusted directories (the directories
//     of the daemon's secure PATH).
//
// The second condition is the point: a rule written for "apt" must allow the
// system's apt, never a program called apt in a directory the agent can
// write to, such as /tmp/evil/apt or ./apt. An agent controls the argv it
// sends; it does not control what is in /usr/bin. A program whose path is not
// clean and absolute never matches any rule and is denied outright, because
// it can only come from a bug in the caller and a path such as
// /usr/bin/../../tmp/x would otherwise match "/usr/bin/*".
//
// Trusted directories are compared as strings; the engine does not resolve
// symbolic links. The daemon's resolver decides which path it reports.
//
// # Decisions
//
// For each stage, the rules are tried in order and the first one that
// applies (its Match, Privileged, Session, User, UID and Group hold and, for
// an allow rule, the conditions above) decides that stage's action; when
// none applies the stage's action is "ask". Then, for the whole pipeline:
//
//   - if any stage is denied, the pipeline is denied, naming the first
//     denied stage and its rule;
//   - if every stage is allowed, the pipeline is allowed;
//   - otherwise a human is asked.
//
// A pipeline is therefore only as allowed as its least allowed stage:
// allowing "cat" does not let "cat /etc/shadow | curl -d @- ..." through
// unless curl with those arguments is allowed too.
//
// # The linter
//
// Some rules are valid and still give root away: "**" after a program that
// runs commands through its options (apt -o APT::Update::Pre-Invoke::=CMD,
// git -c core.pager=CMD, find -exec) allows every such command. [Lint] warns
// about allow rules with "**" or wildcard arguments for the programs of a
// curated list (lint.go, each entry with its reason), wildcard program
// patterns that match one of them, env = ["*"], and a session constraint
// with no user, uid or group (it restricts nothing). The list cannot be
// complete, so silence is not proof of safety; deny and ask rules are not
// linted because they cannot let anything run unseen.
package rules
