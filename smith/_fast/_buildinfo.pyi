line_trace: bool
debug: bool
c_assertions: bool
compiler: str
cython_version: str

def variant() -> str: ...
