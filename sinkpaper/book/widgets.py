"""Interactive views that keep working in the static book.

In the built book no Python runs: a widget's Python callbacks (``observe``, ``interact``) are dead there and
only its first state shows. What does keep working is state wired in the browser: :func:`slider_stack` links a
slider to a ``widgets.Stack`` of pre-rendered children with ``jslink``, so moving the slider switches the
visible child in the static page (rendered by the html-manager's ``embed.js``, see :mod:`sinkpaper.site.assets`) exactly as
it does live in Jupyter or Colab.

Children are pre-rendered: an HTML string, anything with ``_repr_html_`` (e.g. :class:`.figures.Table`) or an
altair chart, wrapped by :func:`as_child`. Every child's content is stored in the notebook's widget state, so
keep them small (a few tables or charts per slider).
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets as widgets

__all__ = ["SliderStack", "as_child", "slider_stack"]


def _is_altair_chart(obj: Any) -> bool:
    """An altair top-level chart (Chart, LayerChart, HConcatChart, ...), without importing altair."""
    return any(c.__module__.startswith("altair.") and c.__name__ == "TopLevelMixin" for c in type(obj).__mro__)


def _chart_html(chart: Any) -> str:
    """altair's HTML of ``chart`` (:func:`sinkpaper.book.figures.chart_html`, one rendering for the whole book)."""
    from .figures import chart_html

    return chart_html(chart)


def as_child(obj: Any) -> widgets.Widget:
    """Wrap ``obj`` as a child for :func:`slider_stack`.

    * an ipywidgets widget: returned as is;
    * a ``str``: HTML, shown in an ``ipywidgets.HTML``;
    * an altair chart: an ``ipywidgets.Output`` holding the chart's HTML output. (An ``HTML`` widget would not
      do: it inserts markup with ``innerHTML``, which never runs the chart's script. Output widgets render
      their outputs as trusted, so the script runs, in the static book too);
    * anything with ``_repr_html_`` (e.g. :class:`sinkpaper.book.figures.Table`): its HTML.

    Raises ValueError for anything else.
    """
    if isinstance(obj, widgets.Widget):
        return obj
    if isinstance(obj, str):
        return widgets.HTML(value=obj)
    if _is_altair_chart(obj):
        out = widgets.Output()
        # Setting ``outputs`` directly (as Output.append_display_data does) needs no frontend to capture them.
        out.outputs = ({"output_type": "display_data", "data": {"text/html": _chart_html(obj)}, "metadata": {}},)
        return out
    repr_html = getattr(obj, "_repr_html_", None)
    if callable(repr_html):
        html = repr_html()
        if isinstance(html, str):
            return widgets.HTML(value=html)
    raise ValueError(
        f"cannot show a {type(obj).__module__}.{type(obj).__qualname__} as a slider_stack child: pass an HTML "
        f"string, an altair chart, an object with _repr_html_, or an ipywidgets widget")


class SliderStack(widgets.VBox):
    """What :func:`slider_stack` returns: a VBox of ``slider`` above ``stack``, with the ``link`` between them."""

    def __init__(self, slider: widgets.SelectionSlider, stack: widgets.Stack, link: widgets.Widget, **kwargs):
        super().__init__(children=[slider, stack], **kwargs)
        self.slider = slider
        self.stack = stack
        self.link = link


def slider_stack(description: str, labels: Sequence[str], children: Sequence[Any],
                 value_index: int = 0) -> SliderStack:
    """A slider over ``labels`` that shows ``children[i]`` when it is on ``labels[i]``, live and in the static book.

    ``description`` is the slider's caption; ``labels`` are distinct, non-empty strings, one per child;
    ``children`` are widgets or anything :func:`as_child` takes; ``value_index`` is the position shown first.

    The slider's ``index`` is ``jslink``-ed to the stack's ``selected_index``: the link lives in the browser, so
    no kernel is needed. Raises ValueError for invalid arguments.
    """
    if not isinstance(description, str):
        raise ValueError(f"description must be a string, not {type(description).__name__}")
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise ValueError(f"labels must be a list of strings, not {type(labels).__name__}")
    if isinstance(children, (str, bytes)) or not isinstance(children, Sequence):
        raise ValueError(f"children must be a list (one per label), not {type(children).__name__}")
    labels, children = list(labels), list(children)
    if not labels:
        raise ValueError("labels is empty: a slider_stack needs at least one label and child")
    bad = [repr(label) for label in labels if not isinstance(label, str) or not label.strip()]
    if bad:
        raise ValueError(f"labels must be non-empty strings; got {', '.join(bad)}")
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise ValueError(f"labels must be distinct (the slider shows them); repeated: {dupes}")
    if len(children) != len(labels):
        raise ValueError(f"{len(labels)} labels but {len(children)} children: give one child per label")
    if isinstance(value_index, bool) or not isinstance(value_index, int):
        raise ValueError(f"value_index must be an int, not {type(value_index).__name__}")
    if not 0 <= value_index < len(labels):
        raise ValueError(f"value_index {value_index} is out of range for {len(labels)} labels "
                         f"(valid: 0..{len(labels) - 1})")
    kids = [as_child(c) for c in children]

    slider = widgets.SelectionSlider(
        options=list(zip(labels, range(len(labels)))),
        index=value_index,
        description=description,
        continuous_update=True,
        readout=True,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="100%", max_width="40em"),
    )
    stack = widgets.Stack(children=kids, selected_index=value_index)
    link = widgets.jslink((slider, "index"), (stack, "selected_index"))
    return SliderStack(slider, stack, link)
