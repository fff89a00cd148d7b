"""What analysis is handed, read from where it is kept: result documents and A/B session
folders on disk, series, history and stored documents in the datasink, saved comparisons,
the noise book and profile artifacts. Analysis computes; this layer reads."""
