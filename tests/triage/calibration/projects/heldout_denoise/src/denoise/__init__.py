"""denoise: a small convolutional autoencoder that removes noise from 1-D signals."""
