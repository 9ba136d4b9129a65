"""Reference paths, built-in tracks, Frenet projection, surface layouts and speed profiles."""
