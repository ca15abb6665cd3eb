"""Background work: a leased job queue in the authoritative store and a bounded worker pool.

``queue.JobQueue`` enqueues and moves jobs through their states; ``registry.HandlerRegistry``
maps a job kind to its handler; ``worker.WorkerPool`` claims jobs, runs handlers, renews
leases and returns expired ones to the queue; ``runner`` drains the pool on SIGTERM/SIGINT.
The guarantees are described in docs/decisions/0004-leased-job-queue.md.
"""
