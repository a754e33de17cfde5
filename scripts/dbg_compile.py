import sys, traceback
sys.path.insert(0, '.')
from pathlib import Path
from gen import write_module
from prune.config import Config
from tuner.problem import GemmProblem
from tuner.dtypes import DTYPES
import importlib.util
f=DTYPES['fp16']
p=GemmProblem(64,64,64,f,f,f)
m=write_module(p,[Config(32,32,32,1,1,4,2), Config(32,32,32,1,2,4,2)],Path('/tmp').resolve())
spec = importlib.util.spec_from_file_location(m.stem, m); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
for n, c in mod.COMPILERS.items():
    try: print(c())
    except Exception: traceback.print_exc()
