"""Checks a screenshot is not blank, with the standard library only: decodes the PNG (8-bit
RGB or RGBA, non-interlaced, as Chromium writes it) and counts colours and inked pixels.

usage: png_check.py FILE [--colour RRGGBB]... [--trim-to OUT]
  --colour: each colour must appear somewhere
  --trim-to: also write the image to OUT without the rows of background below the page's end
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def write_trimmed(path, width, bpp, rows, margin=24):
    """Writes rows down to the last that differs from the bottom one, and a margin."""
    last = len(rows) - 1
    while last > 0 and rows[last] == rows[-1]:
        last -= 1
    rows = rows[:min(len(rows), last + 1 + margin)]
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, len(rows), 8, 2 if bpp == 3 else 6, 0, 0, 0)
    idat = zlib.compress(b"".join(b"\0" + r for r in rows), 9)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    print(f"{path}: {width}x{len(rows)}")


width, height, bpp, rows = read_png(sys.argv[1])
colours, inked = set(), 0
for line in rows[::2]:
    for x in range(0, width * bpp, bpp * 2):
        px = line[x:x + 3]
        colours.add(px)
        inked += px[0] < 200 or px[1] < 200 or px[2] < 200
sampled = (height // 2) * (width // 2)
print(f"{width}x{height}: {len(colours)} colours, {100 * inked / sampled:.1f} % inked")
assert len(colours) >= 30, f"only {len(colours)} colours: blank or unstyled page"
assert inked / sampled > 0.01, "almost nothing drawn"
want = [bytes.fromhex(c) for i, c in enumerate(sys.argv) if i > 1 and sys.argv[i - 1] == "--colour"]
for c in want:
    found = any(c in line[x:x + 3] for line in rows for x in range(0, width * bpp, bpp) if line[x:x + 3] == c)
    assert found, f"colour {c.hex()} (a plot series) does not appear"
if "--trim-to" in sys.argv:
    write_trimmed(sys.argv[sys.argv.index("--trim-to") + 1], width, bpp, rows)
