// Package rules decides, from rules the human wrote in the daemon's
// configuration, whether a pipeline may run without asking, must be refused,
// or needs a human's approval.
//
// It exists so that the decision that lets a command run as root without a
// human looking at it is made in one small, pure, exhaustively tested place:
// the package does no I/O, keeps no state between calls, and an [Engine] is
// immutable once built, so it is safe for concurrent use. [New] builds an
// Engine from the [Rule] list, the trusted directories (those of the
// daemon's secure PATH) and the [Accounts] that resolve user and group
// names, so that a misspelt name fails loudly; [Engine.Decide] answers a
// [Query] with a [Decision]; [Lint] warns about valid allow rules that give
// root away.
//
// For each stage the first rule that applies decides (an allow rule applies
// only when the arguments its wildcards cover, the request's environment
// and its agent forwarding are what the rule allows; one that does not is
// recorded in [StageDecision].Passed); a stage no rule decides is asked
// about. A pipeline is denied if any stage is, allowed only if every stage
// is, and asked about otherwise. A bare program name matches only a program
// in a trusted directory; a program path that is not clean and absolute
// matches no rule and is denied.
//
// docs/config.md ("Rules") specifies the patterns, the constraints, what an
// allow rule accepts and why, and what the linter looks for.
package rules
