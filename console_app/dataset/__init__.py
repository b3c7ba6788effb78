"""DATASET tab: dataset CSV paths, previews with thumbnails, class histograms and variable matching."""
