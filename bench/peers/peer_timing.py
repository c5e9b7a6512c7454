"""Timing shared by the peers of `ember bench pretrained`."""
import time


def best_seconds(fn, reps):
    """The fastest of `reps` runs of fn() after one warm-up run, in seconds."""
    fn()  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
