"""User-facing errors: each becomes one line on stderr and an exit code, never a traceback."""

EXIT_OK = 0
EXIT_WRONG_RESULT = 1
EXIT_BAD_INPUT = 2


class UserError(Exception):
    """Bad input or environment; the message names the field or file at fault."""

    exit_code = EXIT_BAD_INPUT
