"""Writes export_decompositions.txt: the aten ops of torch.export.default_decompositions(),
one `aten.<name>[.<overload>]` per line. Run with PyTorch 2.15: python export_decompositions.py"""

from torch.export import default_decompositions

names = set()
for op in default_decompositions().keys():
    text = str(op)
    if not text.startswith("aten."):
        continue
    name, overload = text[len("aten."):].rsplit(".", 1)
    names.add("aten." + name + ("" if overload == "default" else "." + overload))

with open("export_decompositions.txt", "w") as f:
    f.write("# The ops of PyTorch 2.15's default export decomposition table (torch.export.default_decompositions()),\n")
    f.write("# one per line; written by export_decompositions.py with that PyTorch.\n")
    for n in sorted(names):
        f.write(n + "\n")
