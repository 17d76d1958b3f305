"""Image-quality metrics (Fréchet distance, KID) and the feature extractors they run on."""
