"""The kernel families, Triton device code and its launch: matmul_family (pointer loads, any GPU), tma_family
(persistent, tensor descriptors, Hopper and newer) and warp_group_family (Gluon, Hopper), which the generated modules
import as a library; bound launches one config of them at run time."""
