"""Scale-out: each replica's summary in Redis, and the merged view of all of them.

`replicas` writes and reads the summaries, `replica_registry` is their
Redis side (the keys, the registry script on Redis's clock, publish, read
and withdraw), `replica_board` keeps the merged board a page or the REST
API reads, `replica_frontends` is the frontends block of a summary.
`lost_cancels` lets every loop that calls Redis (here and in `api.wire`)
end on a cancel the Redis client absorbed.

May import: `scheduler_core`, `api.store`. Never `api.wire` or `api.rest`.
"""
