// The time-series chart library of every page (uPlot), with its stylesheet (vendor/uplot.css).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export default uPlot;
