"""PNG plots of benchmark results (matplotlib, Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path

STYLES = {
    "local cuda-python (pageable)": ("black", "o", "-"),
    "remote rpc": ("tab:red", "s", "--"),
    "remote tcp": ("tab:blue", "^", "-."),
    "remote shm": ("tab:green", "D", "-"),
}


def _size_label(size: int) -> str:
    return (
        f"{size >> 30} GiB"
        if size >= 1 << 30
        else f"{size >> 20} MiB"
        if size >= 1 << 20
        else f"{size >> 10} KiB"
    )


def copy_bandwidth(
    series: dict[str, dict[str, list[tuple[int, float]]]],
    raw_stream_gbps: float | None,
    out: Path,
    title: str = "Copy bandwidth by data path",
) -> Path:
    """Two panels (HtoD, DtoH): GB/s against copy size on a log axis, one line per path,
    and the raw one-stream socket rate as a dotted reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for ax, direction in zip(axes, ("HtoD", "DtoH"), strict=True):
        sizes: set[int] = set()
        for label, by_direction in series.items():
            points = by_direction.get(direction, [])
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            sizes.update(xs)
            color, marker, line = STYLES.get(label, ("gray", ".", "-"))
            ax.plot(xs, ys, color=color, marker=marker, linestyle=line, label=label)
        if raw_stream_gbps:
            ax.axhline(
                raw_stream_gbps,
                color="gray",
                linestyle=":",
                label=f"raw Python socket, 1 stream ({raw_stream_gbps:.1f} GB/s)",
            )
        ax.set_xscale("log", base=2)
        ticks = sorted(sizes)
        ax.set_xticks(ticks, [_size_label(s) for s in ticks])
        ax.set_title(direction)
        ax.set_xlabel("copy size")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("GB/s (best of repeats)")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
