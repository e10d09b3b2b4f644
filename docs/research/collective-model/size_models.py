"""Size models for collectives: hold out each interior size of every curve, predict it from the
rest (log-log, linear in bytes, their geometric mean, monotone cubic in log-log).
  python3 size_models.py ../../../../shared/data/measured/collective_*.csv
"""
import csv, math, collections, sys
def load(f):
    c=collections.defaultdict(dict)
    for r in csv.DictReader(open(f)):
        c[(r['op'],int(r['ranks']))].setdefault(int(r['bytes']),[]).append(float(r['time_ns']))
    return {k:dict((b,sum(v)/len(v)) for b,v in d.items()) for k,d in c.items()}
def q(v,x): v=sorted(v); return v[int(x*(len(v)-1))]
def pchip_slopes(xs,ys):
    n=len(xs); h=[xs[i+1]-xs[i] for i in range(n-1)]; d=[(ys[i+1]-ys[i])/h[i] for i in range(n-1)]
    m=[0]*n
    for i in range(1,n-1):
        if d[i-1]*d[i]<=0: m[i]=0
        else:
            w1=2*h[i]+h[i-1]; w2=h[i]+2*h[i-1]; m[i]=(w1+w2)/(w1/d[i-1]+w2/d[i])
    m[0]=d[0]; m[-1]=d[-1]
    return m
def pchip(xs,ys,x):
    m=pchip_slopes(xs,ys)
    for i in range(len(xs)-1):
        if xs[i]<=x<=xs[i+1]:
            h=xs[i+1]-xs[i]; t=(x-xs[i])/h
            h00=2*t**3-3*t**2+1; h10=t**3-2*t**2+t; h01=-2*t**3+3*t**2; h11=t**3-t**2
            return h00*ys[i]+h10*h*m[i]+h01*ys[i+1]+h11*h*m[i+1]
def variants(xs,ts,x):
    # xs, ts: training points sorted; x interior
    i=max(j for j in range(len(xs)) if xs[j]<x); a,b=xs[i],xs[i+1]; ta,tb=ts[i],ts[i+1]
    out={}
    w=(math.log(x)-math.log(a))/(math.log(b)-math.log(a))
    ll=math.exp(math.log(ta)+w*(math.log(tb)-math.log(ta)))
    out['loglog']=ll
    lin=ta+(tb-ta)*(x-a)/(b-a)
    out['lin bytes']=lin
    out['geo mean']=math.sqrt(ll*lin)
    out['pchip loglog']=math.exp(pchip([math.log(v) for v in xs],[math.log(v) for v in ts],math.log(x)))
    return out
E=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    cur=load(f); name=f.split('_')[-1][:10]
    for k,pts in cur.items():
        xs=sorted(pts)
        for j in range(1,len(xs)-1):
            tr=[v for v in xs if v!=xs[j]]
            for kk,v in variants(tr,[pts[v] for v in tr],xs[j]).items():
                E[name][kk].append(abs(v-pts[xs[j]])/pts[xs[j]])
for name,d in E.items():
    print(name)
    for k,v in d.items(): print('   %-16s n=%d median %.2f%% p90 %.2f%%'%(k,len(v),100*q(v,.5),100*q(v,.9)))
