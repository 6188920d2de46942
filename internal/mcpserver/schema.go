package mcpserver

// instructions is what the server tells a client about itself when a
// session starts.
const instructions = `agent-sudo runs commands as root on this machine after a human (or a rule the human wrote) approves each one. Use its "execute" tool only for commands that need root, or that need the human's approval; run everything else yourself. There is no shell: give argv arrays.`

// toolDescription tells a model when and how to use the execute tool.
const toolDescription = `Run a command as root on this machine through agent-sudo. Use it only for commands that need root: installing packages, editing files under /etc, managing services, reading protected logs. Run commands that work without root yourself, not through this tool.

A human approves each call (unless a rule the human wrote allows it), so a call may take minutes. The result gives the status (ok: it ran; denied; timeout; error), each stage's exit code, stdout and stderr. If a call is denied, do not send the same command again: change it, or ask the user.

There is NO shell. The command is an argv array executed directly, so |, >, <, &&, ||, ;, globs (*), ~ and $VAR are NOT interpreted: they reach the program as literal arguments.
- One command: argv, e.g. ["apt-get", "install", "-y", "nginx"]. Each argument is its own string, without quotes.
- A pipe: pipeline, one argv per stage, e.g. [["journalctl", "-u", "nginx", "-n", "100"], ["grep", "error"]].
- To write a file, give its content as stdin and run tee: {"argv": ["tee", "/etc/nginx/conf.d/port.conf"], "stdin": "listen 8080;\n"} (tee -a appends). To copy a file you wrote yourself: ["install", "-m", "0644", "/tmp/x.conf", "/etc/x.conf"].
- Stdin is empty (/dev/null): nothing can be typed or piped in from outside.
- A shell script is possible only as ["sh", "-c", "..."], which the human must read and approve as a whole; prefer plain commands.`

// inputSchema is the execute tool's input schema. It does not use oneOf for
// "argv or pipeline": several model APIs refuse combinators at the top level
// of a tool schema. The handler enforces the rule instead.
const inputSchema = `{
  "type": "object",
  "properties": {
    "argv": {
      "type": "array",
      "items": {"type": "string"},
      "minItems": 1,
      "description": "The command as an argument vector: the program, then each argument as its own string, exactly as the program should receive it (no quoting, no shell syntax), e.g. [\"systemctl\", \"restart\", \"nginx\"]. Give either argv or pipeline, not both."
    },
    "pipeline": {
      "type": "array",
      "items": {"type": "array", "items": {"type": "string"}, "minItems": 1},
      "minItems": 1,
      "maxItems": 32,
      "description": "A pipeline: one argv per stage; each stage's stdout feeds the next stage's stdin, like a | b in a shell, e.g. [[\"dpkg\", \"-l\"], [\"grep\", \"nginx\"]]. The result shows every stage's exit code and stderr and the last stage's stdout. Give either argv or pipeline, not both."
    },
    "reason": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "Required. Why this command must run, in a sentence or two. The human who approves it reads this: say what you are trying to achieve."
    },
    "env": {
      "type": "object",
      "additionalProperties": {"type": "string"},
      "description": "Extra environment variables for the command, e.g. {\"DEBIAN_FRONTEND\": \"noninteractive\"}. The daemon accepts only the variables it allows (by default LANG, LC_*, TZ, TERM, DEBIAN_FRONTEND, NEEDRESTART_MODE), each only with a well-formed value (a locale name, a zone name like Europe/Paris, a debconf frontend like noninteractive, ...), and refuses the request for any other; at most 64 variables."
    },
    "privileged": {
      "type": "boolean",
      "default": true,
      "description": "true (the default) runs the command as root. false runs it as the user, still after approval."
    },
    "forward_agent": {
      "type": "boolean",
      "default": false,
      "description": "Give the command the approving human's SSH agent, e.g. for git or ssh to another machine. Only with privileged false."
    },
    "cwd": {
      "type": "string",
      "description": "Working directory of the command: an absolute path to an existing directory. Default /."
    },
    "stdin": {
      "type": "string",
      "maxLength": 737280,
      "description": "Text the (first) command reads on its standard input, e.g. a file's new content for [\"tee\", \"/etc/x.conf\"]. The human sees it before approving. Default: no input."
    }
  },
  "required": ["reason"],
  "additionalProperties": false
}`
