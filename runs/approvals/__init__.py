"""Approval for writing tools (DESIGN.md 1): a run that calls a tool with a
side effect pauses as `awaiting`; a reviewer approves the call, edits its
arguments or denies it, and the decision reaches the agent as the
observation when the run resumes. Nothing in a tool result can approve."""
