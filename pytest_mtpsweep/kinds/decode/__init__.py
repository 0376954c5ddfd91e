"""The decode-rate experiment: prompt × treatment × cycle, one streamed request each."""
