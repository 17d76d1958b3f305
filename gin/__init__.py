"""Shipped gin configs, installed as the package ``lipgan_configs`` so ``lipgan run`` finds them anywhere."""
