"""Process management: `trellis dev` (supervisor, embedded Temporal dev server, preflight
checks, child environments) and the `trellis api` / `trellis worker` processes.
"""
