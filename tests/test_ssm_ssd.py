"""Mamba-2's chunked algorithm (SSD) against the sequential selective scan, the whole
semiseparable matrix and gated linear attention: one recurrence, four computations."""

import pytest
import torch

from seqbook.linear_attention import gated_linear_attention
from seqbook.ssm import selective_scan_sequential, semiseparable_matrix, ssd_chunk, ssd_chunked


def _inputs(b=2, L=37, N=5, P=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    dt = torch.float64
    x = torch.randn(b, L, P, generator=g, dtype=dt)
    delta = torch.nn.functional.softplus(torch.randn(b, L, generator=g, dtype=dt))
    B, C = torch.randn(2, b, L, N, generator=g, dtype=dt)
    return x, delta, B, C


@pytest.mark.parametrize("chunk_size", [1, 4, 8, 16, 37, 64])
def test_chunks_equal_the_sequential_scan(chunk_size):
    # L = 37 is divisible by none of 4, 8, 16: the last chunk is shorter
    x, delta, B, C = _inputs()
    A = -0.8  # one decay a_t = exp(delta_t A) for every state and channel
    P, N = x.shape[2], B.shape[2]
    # the selective scan with every channel given the same step and A
    scan = selective_scan_sequential(
        x, delta[..., None].expand(-1, -1, P), torch.full((P, N), A, dtype=x.dtype),
        B, C, torch.zeros(P, dtype=x.dtype))
    # it writes delta_t B_t x_t: SSD takes delta_t B_t as its keys
    chunked = ssd_chunked(x, delta * A, B * delta[..., None], C, chunk_size)
    assert (chunked - scan).abs().max() < 1e-12


@pytest.mark.parametrize("chunk_size", [1, 5, 37])
def test_chunks_equal_the_quadratic_form_and_gated_linear_attention(chunk_size):
    x, delta, B, C = _inputs(seed=1)
    log_a = -delta
    whole = semiseparable_matrix(log_a, B, C) @ x
    assert (ssd_chunked(x, log_a, B, C, chunk_size) - whole).abs().max() < 1e-12
    gla = gated_linear_attention(C, B, x, log_a.exp()[..., None])  # q = C, k = B, v = x
    assert (gla - whole).abs().max() < 1e-12


def test_one_chunk_from_a_state_continues_the_sequence():
    x, delta, B, C = _inputs(L=12, seed=2)
    log_a = -delta
    whole = ssd_chunked(x, log_a, B, C, chunk_size=12)
    H = x.new_zeros(2, 5, 3)
    H, first = ssd_chunk(H, log_a[:, :7], B[:, :7], C[:, :7], x[:, :7])
    _, second = ssd_chunk(H, log_a[:, 7:], B[:, 7:], C[:, 7:], x[:, 7:])
    assert (torch.cat([first, second], 1) - whole).abs().max() < 1e-12


def test_gradients_match_the_whole_matrix():
    x, delta, B, C = _inputs(L=10, seed=3)
    log_a = (-delta).requires_grad_()
    ssd_chunked(x, log_a, B, C, 4).square().sum().backward()
    chunk_grad = log_a.grad.clone()
    log_a.grad = None
    (semiseparable_matrix(log_a, B, C) @ x).square().sum().backward()
    assert (chunk_grad - log_a.grad).abs().max() < 1e-10


def test_bad_input_names_the_argument():
    x, delta, B, C = _inputs(L=6)
    with pytest.raises(ValueError, match="^chunk_size must be >= 1"):
        ssd_chunked(x, -delta, B, C, 0)
    with pytest.raises(TypeError, match="^chunk_size must be int"):
        ssd_chunked(x, -delta, B, C, 2.0)
    with pytest.raises(ValueError, match=r"^log_a must be <= 0"):
        ssd_chunked(x, delta, B, C, 2)
    with pytest.raises(TypeError, match=r"^log_a must be .*dimension L is 5"):
        ssd_chunked(x, -delta[:, :5], B, C, 2)
    with pytest.raises(TypeError, match=r"^C must be .*dimension N is 4"):
        ssd_chunked(x, -delta, B, C[..., :4], 2)
    with pytest.raises(ValueError, match=r"^x must have shape \(b, L, P\) with L >= 1"):
        ssd_chunked(x[:, :0], -delta[:, :0], B[:, :0], C[:, :0], 2)
