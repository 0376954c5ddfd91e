"""The load kind's run side: its cases, the warm-up, one level block measured on a live
session, what is sampled around it (occupancy, energy, a capacity probe), a replay's requests,
the pre-registration lines."""
