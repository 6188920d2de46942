// Package runner executes an approved pipeline and owns the policy for the
// environment and the program files it runs.
//
// [Resolve] and [ResolveDir] turn the agent's program names and directory
// into the files that will be used, and [OpenProgram] and [OpenDir] open
// them, so that what runs is the file the human was shown ([File.Verify]
// checks it again before the first stage starts). [EnvPolicy.BuildEnv]
// builds a stage's whole environment from the allowlist and the value
// grammars; nothing is inherited from the daemon, and the deny list
// ([DenyList]) is refused in requests and in env_allow alike. [Run] starts
// the stages of a [Spec], every argv handed to execve and never to a shell,
// in one process group (or one session each when the daemon has a
// controlling terminal) and, with [Spec.Cgroups], one cgroup per pipeline
// ([OpenCgroups]); it captures the last stage's stdout and every stage's
// stderr up to [Spec.MaxOutput], which a [Live] can show while it runs;
// on timeout or cancellation it sends SIGTERM and, after Spec.KillGrace,
// SIGKILL; and it returns only once every stage is reaped and nothing it
// started is left alive. [ModeDirect] starts the stages with the target's
// credentials, [ModeSudo] through sudo.
//
// docs/execution.md explains why each of these rules is as it is.
package runner
