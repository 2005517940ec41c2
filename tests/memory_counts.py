"""Exact allocation counts of deterministic paths, in one place (tests/test_memory_counts.py).

Each count is what memory accounting sees on the measuring thread (every allocator
domain, every scope) for one operation after a warm-up, starting from a full collection
(which empties the interpreter's free lists: what they held depended on the process's
history, such as whether modules were compiled from source), and the test asserts it
exactly, in processes that differ in checkout directory, hash seed and bytecode cache,
so any change shows up here as a diff: a drop is an improvement to record (lower the
count, and the bound with it), a rise needs a reason in the commit that raises it.
BOUNDS may only tighten. Regenerate the counts with: python tests/test_memory_counts.py

They hold for CPython 3.11 with the dependencies pyproject.toml pins; another
interpreter or library version may move them. Between machines of one kind, with the
same interpreter, two counts have been seen to move by a few allocations (session.fork
157 and 158, turn.idle 309 and 311: a fresh install's library versions and the machine
differ): SPREAD is how far a count may sit from its recorded value. Within one machine,
every run must still agree exactly.
"""

# Session.fork at the last entry of a linear session, whole (new file published, the
# arena shared copy-on-write, the lock taken): the same for 1,000 and 4,000 entries.
# (Of those, ~55 are os.makedirs raising and catching FileExistsError in publish.)
# Loading frames into the arena (Arena.load, read in one chunk): the same for 1,000 and
# 10,000 entries.
# Encoding one entry frame (message content of a user turn, canonical CBOR, framed).
# An idle turn: the scripted provider answers text, no tool call (the turn scope once
# three turns in a row agree, in a fresh process). 310 since the runtime keeps the
# questions waiting for its frontend (one attribute more: measured 312 -> 313 on a
# machine where the count was 312); 314 since the context holds notes (environment,
# instructions): the path's non-message entries are searched for them, two of_kind
# calls (+4); 317 since each request looks for image parts naming session blobs to put
# the bytes back in (smith.runtime._images.resolve: the loop's iterator, +3; measured
# 317 -> 320 on a machine where the count was 317); 323 since every event names the
# submission that caused it (Runtime.emit reads the run's context variable and adds the
# field: +1 an event, five in an idle turn, and a round sets it again when the turn
# scope runs it in a context of its own; measured 320 -> 326 on a machine where the
# count was 320); 340 since every appended entry is an `entry` event (an idle turn
# appends two, the prompt and the answer: the event's dict, its submission, the loop
# looked up; 327 -> 334 at 9559673) and plugins have a lifecycle (a safe point's
# handlers are those of the plugins that are ready: 334 -> 340 at 7989a7e); 342 since
# the response step takes the services of its turn and returns what it found (the
# Streamed result and the call's arguments: 340 -> 342); 487 since the agent library's
# built-ins (plan, hooks, skills, agents, mcp) take part in every turn: each is asked
# whether it has anything to do at each safe point it handles (Plugin.wants, with a view
# kept per generation, turn and mode: 498 -> 487), and the safe points they handle
# (session_start, input, agent_start, turn_start, turn_end, agent_end) are dispatched
# where none was before (342 -> 498, measured with the five left out: 342).
# session.fork 160 since a fork is never published over an existing file (it looks
# first: +3); 156 since the fork's bytes are built by smith.session._codec.fork_bytes
# (measured 159 -> 156 on this machine).
COUNTS = {
    "session.fork": 156,
    "arena.load": 27,
    "entry.encode": 19,
    "turn.idle": 487,
}

# Ceilings the counts must stay under: lower one when its count drops for good.
BOUNDS = {
    "session.fork": 166,
    "arena.load": 30,
    "entry.encode": 22,
    "turn.idle": 490,
}

# How far a count may sit from COUNTS on another machine of the kind (see above).
SPREAD = {
    "session.fork": 2,
    "arena.load": 0,
    "entry.encode": 0,
    "turn.idle": 3,
}
