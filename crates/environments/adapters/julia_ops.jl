# EarthVerse adapter over Julia (Table 14: summary; integration; sensitivity).
# UNTESTED in this project: Julia has no Debian package, CI does not install
# it. Run in the OS sandbox as: julia --startup-file=no julia_ops.jl OP INPUT.csv DT
using Statistics
op, path = ARGS[1], ARGS[2]
lines = readlines(path)
header = split(lines[1], ",")
rows = split.(lines[2:end], ",")
col(name) = parse.(Float64, replace.(getindex.(rows, findfirst(==(name), header)), "NA" => "NaN"))
f(v) = isfinite(v) ? repr(v) : "null"
if op == "julia_summary"
    s = filter(isfinite, col("series"))
    println("{\"status\": \"ok\", \"result\": {\"n\": $(length(s)), \"mean\": $(f(mean(s))), \"std\": $(f(std(s))), \"min\": $(f(minimum(s))), \"max\": $(f(maximum(s))), \"median\": $(f(quantile(s, 0.5)))}}")
elseif op == "julia_integration"
    s = filter(isfinite, col("series")); dt = parse(Float64, ARGS[3])
    integral = sum((s[1:end-1] .+ s[2:end]) ./ 2) * dt
    println("{\"status\": \"ok\", \"result\": {\"n\": $(length(s)), \"integral\": $(f(integral))}}")
elseif op == "julia_sensitivity"
    x, y = col("x"), col("y"); ok = isfinite.(x) .& isfinite.(y)
    x, y = x[ok], y[ok]
    slope = cov(x, y) / var(x)
    println("{\"status\": \"ok\", \"result\": {\"n\": $(length(x)), \"slope\": $(f(slope)), \"correlation\": $(f(cor(x, y)))}}")
else
    println("{\"status\": \"error\", \"failure_class\": \"adapter\", \"message\": \"unknown operation\"}")
end
