"""What a run holds: its directory on disk (`rundir` writes it, `runread` reads it back), what
every session shares (`context`) and a session in progress (`live`). Below the kind interface,
so the protocol and the kinds both read it and neither imports the other."""
