"""The few NIfTI-1 header fields the device scripts need, from a .nii.gz (standard library only,
for the device machine, which has no nibabel)."""
import array, gzip, struct, sys

# NIfTI datatype code -> array typecode.
CODES = {2: 'B', 16: 'f', 4: 'h', 8: 'i', 512: 'H', 64: 'd'}


def read(path):
    """(raw bytes, (nx, ny, nz), datatype, voxel offset, voxel values as an array)."""
    raw = gzip.open(path).read()
    dims = struct.unpack('<8h', raw[40:56])
    datatype = struct.unpack('<h', raw[70:72])[0]
    off = int(struct.unpack('<f', raw[108:112])[0])
    if datatype not in CODES:
        sys.exit(f'{path}: datatype {datatype} not handled')
    n = dims[1] * dims[2] * dims[3]
    size = array.array(CODES[datatype]).itemsize
    return raw, dims[1:4], datatype, off, array.array(CODES[datatype], raw[off:off + size * n])
