"""Checkpoint and restart of the server's sessions: everything that takes GPU state out of
sessions and puts it back, in one place. The on-disk format, its reader and writer and the
`cricket-checkpoint` tool are the `checkpoint` package, which imports nothing of the server.

| module     | holds                                                                         |
| ---------- | ----------------------------------------------------------------------------- |
| `sessions` | snapshot (`consistent_cut`, `snapshot_session`, `write_checkpoint`), restore  |
|            | (`restore_checkpoint`, `close_unclaimed`), triggers (`CheckpointTrigger`:     |
|            | SIGUSR1, --checkpoint-every, the final one), CHECKPOINT_* (`checkpoint_call`) |
| `workers`  | the same across worker processes (process isolation): parts written by each   |
|            | worker, committed by the main process; forwarded CHECKPOINT_SERVER calls      |
| `targets`  | a tenant replaces no checkpoint but its own session's                         |
| `restart`  | a checkpoint's sessions brought back before a server listens                  |
|            | (`cricket-restart`: in this process, or one worker process per session)       |
"""
