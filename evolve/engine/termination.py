"""The exception SIGTERM raises in a driver, on its own so that the command line can catch it
without importing the runtime (Ray)."""


class Terminated(BaseException):
    """SIGTERM reached the driver: it stops like Ctrl-C (interrupted, resumable)."""
