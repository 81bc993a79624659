import torch

from core.training.memory_meter import LiveTensorMeter


def test_counts_a_known_allocation_pattern_exactly():
    with LiveTensorMeter() as meter:
        a = torch.ones(1000)  # 4,000 bytes
        view = a[10:20].reshape(2, 5)  # a view: the same storage, not counted again
        a.mul_(2)  # in place: nothing new
        b = torch.empty(250, dtype=torch.float64)  # 2,000: 6,000 live
        c = a + 1  # 4,000: 10,000 live, the peak
        del a, view  # a's storage dies with its last view: 6,000
        d = torch.zeros(100, dtype=torch.int8)  # 100: 6,100
    assert meter.peak_bytes == 10_000 and meter.live_bytes == 6_100
    del b, c, d
    assert meter.live_bytes == 0


def test_existing_tensors_are_tracked_once_and_training_state_is_counted():
    model = torch.nn.Linear(64, 32)  # 64*32 + 32 parameters, fp32
    weights = (64 * 32 + 32) * 4
    with LiveTensorMeter() as meter:
        meter.track(list(model.parameters()) * 2)  # the same parameters twice: counted once
        assert meter.live_bytes == weights
        loss = model(torch.randn(8, 64)).sum()
        loss.backward()
        torch.optim.SGD(model.parameters(), lr=0.1).step()
    # the gradients (one per parameter) are alive after the step; activations and the input are gone
    assert meter.live_bytes == 2 * weights + loss.untyped_storage().nbytes()
    assert meter.peak_bytes > meter.live_bytes
